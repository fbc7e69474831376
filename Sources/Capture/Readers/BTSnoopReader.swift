/// btsnoop files (RFC 1761 style, big-endian): a 16-byte header, then records of a 24-byte header
/// (original and included length, flags, cumulative drops, timestamp in µs since year 0) and data.
final class BTSnoopReader: RecordSource {
    /// Microseconds from year 0 to the Unix epoch, as btsnoop counts them.
    static let epochOffset: Int64 = 0x00DC_DDB3_0F2F_8000

    let format: CaptureFormat
    let encapsulation: Encapsulation
    private let input: ByteInput
    private(set) var problems = ProblemLog()
    private(set) var frames = 0
    private var stopped = false

    var linktypes: [UInt32] {
        if case .btsnoop(let datalink) = format { return [datalink] }
        return []
    }

    init(_ input: ByteInput) throws(CaptureProblem) {
        self.input = input
        guard let header = input.read(16) else { throw input.shortHeader("btsnoop header", needed: 16, frame: nil, at: 0) }
        var cursor = ByteCursor(header.dropFirst(8))
        let version = cursor.u32(bigEndian: true)!
        let datalink = cursor.u32(bigEndian: true)!
        guard version == 1 else { throw CaptureProblem(.unsupportedVersion(format: "btsnoop", version: "\(version)"), offset: 8) }
        switch datalink {
        case 1001: encapsulation = .hciWithFlags
        case 1002: encapsulation = .h4
        case 2001: encapsulation = .monitorWithFlags
        default: throw CaptureProblem(.unsupportedDatalink(datalink), offset: 12)
        }
        format = .btsnoop(datalink: datalink)
    }

    func next() -> HCIRecord? {
        while !stopped {
            let recordOffset = input.offset
            guard let header = input.read(24) else {
                if !input.atEnd { stop(input.shortHeader("record header", needed: 24, frame: frames + 1, at: recordOffset)) }
                stopped = true
                return nil
            }
            frames += 1
            var cursor = ByteCursor(header)
            let originalLength = cursor.u32(bigEndian: true)!
            let includedLength = cursor.u32(bigEndian: true)!
            let flags = cursor.u32(bigEndian: true)!
            _ = cursor.u32(bigEndian: true)  // cumulative drops
            let rawTimestamp = Int64(bitPattern: cursor.u64(bigEndian: true)!)
            guard includedLength <= CaptureFormat.maximumRecordLength else {
                stop(
                    CaptureProblem(
                        .absurdLength(what: "record", length: UInt64(includedLength), limit: CaptureFormat.maximumRecordLength),
                        frame: frames, offset: recordOffset))
                return nil
            }
            guard let data = input.read(Int(includedLength)) else {
                stop(input.shortRecord(needed: Int(includedLength), frame: frames, at: recordOffset))
                return nil
            }
            let (unwrapped, problem) = encapsulation.unwrap(data, originalLength: Int(originalLength), flags: flags)
            if let problem { problems.add(CaptureProblem(problem, frame: frames, offset: recordOffset)) }
            guard let unwrapped else { continue }
            return HCIRecord(
                frame: frames, timestamp: rawTimestamp == 0 ? nil : rawTimestamp &- Self.epochOffset,
                direction: unwrapped.direction, controller: unwrapped.controller, kind: unwrapped.kind,
                payload: unwrapped.payload, originalLength: unwrapped.originalLength, fileOffset: recordOffset)
        }
        return nil
    }

    private func stop(_ problem: CaptureProblem) {
        problems.add(problem)
        stopped = true
    }
}
