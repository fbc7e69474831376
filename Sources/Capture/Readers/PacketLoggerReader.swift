/// Apple PacketLogger files (`.pklg`: macOS's PacketLogger, or an iPhone with Apple's Bluetooth logging profile).
/// No file header: records of a length (of what follows it), seconds and microseconds since the Unix epoch (4
/// bytes each), a type byte and the packet. Older files are big-endian, newer ones (iOS) little-endian: the
/// first length tells which, as Wireshark's reader decides.
final class PacketLoggerReader: RecordSource {
    /// Records looked at before taking bytes with no magic for a PacketLogger file (Wireshark's number too).
    static let recordsChecked = 5
    /// The most a record's length may be in the records checked (Wireshark's limit when it tells the format).
    static let checkedRecordLength: UInt32 = 65_536

    let format: CaptureFormat
    private let bigEndian: Bool
    private let input: ByteInput
    private(set) var problems = ProblemLog()
    private(set) var frames = 0
    private var stopped = false
    /// Record types met that are neither HCI nor one of PacketLogger's known text and diagnostic records (in the
    /// order met), how many such records, and the first one's frame: a note, not damage (Apple adds types).
    private var unknownTypes: [UInt8] = []
    private var unknownRecords = 0
    private var firstUnknownFrame = 0

    var linktypes: [UInt32] { [] }

    init(_ input: ByteInput, bigEndian: Bool) {
        self.input = input
        self.bigEndian = bigEndian
        format = .packetLogger(bigEndian: bigEndian)
    }

    /// What a record's type byte says.
    enum RecordType {
        case hci(HCIPacketKind, HCIDirection)
        /// LMP traffic, text notes, logs, power and configuration records: not HCI, skipped.
        case other
        case unknown
    }

    static func recordType(_ type: UInt8) -> RecordType {
        switch type {
        case 0x00: .hci(.command, .hostToController)
        case 0x01: .hci(.event, .controllerToHost)
        case 0x02: .hci(.acl, .hostToController)
        case 0x03: .hci(.acl, .controllerToHost)
        case 0x08: .hci(.sco, .hostToController)
        case 0x09: .hci(.sco, .controllerToHost)
        // LMP sent and received; syslog, kernel, kernel debug, error, power, note, configuration, new controller.
        case 0x0A, 0x0B, 0xF7...0xFE: .other
        default: .unknown
        }
    }

    /// Whether the input (not consumed) starts like a PacketLogger file, and in which byte order: the first
    /// records (up to ``recordsChecked``) have a plausible length, microseconds below a million and a known
    /// type (as Wireshark tells the format: a type it does not know there makes the bytes no PacketLogger file;
    /// further on, such records are skipped and noted). Nil when they do not.
    static func sniff(_ input: ByteInput) -> Bool? {
        guard let first = input.peek(4) else { return nil }
        var firstCursor = ByteCursor(first)
        let word = firstCursor.u32(bigEndian: false)!
        // A big-endian length below 65,536 read as little-endian has its low 16 bits clear and not its high ones.
        let bigEndian = word & 0xFFFF == 0 && word >> 16 != 0
        var offset = 0
        for index in 0..<recordsChecked {
            guard let bytes = input.peek(offset + 12) else {
                // The input ends after the first record's header: a short file, or one cut short (reported where
                // it ends when read; Wireshark refuses a cut inside the headers of records 2 to 5, we read up to it).
                return index > 0 ? bigEndian : nil
            }
            var cursor = ByteCursor(bytes.dropFirst(offset))
            let length = cursor.u32(bigEndian: bigEndian)!
            _ = cursor.u32(bigEndian: bigEndian)
            let microseconds = cursor.u32(bigEndian: bigEndian)!
            guard length >= 8, length < checkedRecordLength, microseconds < 1_000_000 else { return nil }
            if length > 8 {
                guard let typed = input.peek(offset + 13) else { return nil }
                if case .unknown = recordType(typed[typed.startIndex + offset + 12]) { return nil }
            }
            offset += 4 + Int(length)
        }
        return bigEndian
    }

    func next() -> HCIRecord? {
        while !stopped {
            let recordOffset = input.offset
            guard let header = input.read(12) else {
                if !input.atEnd { stop(input.shortHeader("record header", needed: 12, frame: frames + 1, at: recordOffset)) }
                stopped = true
                return nil
            }
            frames += 1
            var cursor = ByteCursor(header)
            let length = cursor.u32(bigEndian: bigEndian)!
            let seconds = cursor.u32(bigEndian: bigEndian)!
            let microseconds = cursor.u32(bigEndian: bigEndian)!
            guard length >= 8 else {
                stop(CaptureProblem(.recordTooShort(length: Int(length), minimum: 8), frame: frames, offset: recordOffset))
                return nil
            }
            let dataLength = Int(length) - 8
            guard dataLength <= CaptureFormat.maximumRecordLength else {
                stop(
                    CaptureProblem(
                        .absurdLength(what: "record", length: UInt64(dataLength), limit: CaptureFormat.maximumRecordLength),
                        frame: frames, offset: recordOffset))
                return nil
            }
            guard let data = input.read(dataLength) else {
                stop(input.shortRecord(needed: dataLength, frame: frames, at: recordOffset))
                return nil
            }
            guard let type = data.first else {
                problems.add(CaptureProblem(.emptyRecord, frame: frames, offset: recordOffset))
                continue
            }
            switch Self.recordType(type) {
            case .hci(let kind, let direction):
                let timestamp = Int64(seconds) * 1_000_000 + Int64(microseconds)
                return HCIRecord(
                    frame: frames, timestamp: timestamp, direction: direction, controller: nil, kind: kind,
                    payload: data.dropFirst(), originalLength: dataLength - 1, fileOffset: recordOffset)
            case .other:
                continue
            case .unknown:
                if unknownRecords == 0 { firstUnknownFrame = frames }
                unknownRecords += 1
                if !unknownTypes.contains(type) { unknownTypes.append(type) }  // at most 256
                continue
            }
        }
        return nil
    }

    var notes: [CaptureNote] {
        unknownRecords == 0 ? [] : [.unknownRecordTypes(types: unknownTypes, count: unknownRecords, firstFrame: firstUnknownFrame)]
    }

    private func stop(_ problem: CaptureProblem) {
        problems.add(problem)
        stopped = true
    }
}
