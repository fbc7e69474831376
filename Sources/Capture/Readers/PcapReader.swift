/// libpcap files: a 24-byte header (magic in the writer's byte order: µs or ns timestamps; version; snap
/// length; linktype), then records of a 16-byte header (seconds, fraction, included and original length) and data.
final class PcapReader: RecordSource {
    let format: CaptureFormat
    private let encapsulation: Encapsulation
    private let bigEndian: Bool
    private let nanoseconds: Bool
    private let input: ByteInput
    private(set) var problems = ProblemLog()
    private(set) var frames = 0
    private var stopped = false

    var linktypes: [UInt32] {
        if case .pcap(let linktype, _, _) = format { return [linktype] }
        return []
    }

    init(_ input: ByteInput, bigEndian: Bool, nanoseconds: Bool) throws(CaptureProblem) {
        self.input = input
        self.bigEndian = bigEndian
        self.nanoseconds = nanoseconds
        guard let header = input.read(24) else { throw input.shortHeader("pcap header", needed: 24, frame: nil, at: 0) }
        var cursor = ByteCursor(header.dropFirst(4))
        let major = bigEndian ? cursor.u16be()! : cursor.u16le()!
        let minor = bigEndian ? cursor.u16be()! : cursor.u16le()!
        _ = cursor.skip(8)  // time zone, significant figures
        _ = cursor.u32(bigEndian: bigEndian)  // snap length
        // The upper four bits may carry FCS information; the linktype is the rest.
        let linktype = cursor.u32(bigEndian: bigEndian)! & 0x0FFF_FFFF
        guard major == 2 else { throw CaptureProblem(.unsupportedVersion(format: "pcap", version: "\(major).\(minor)"), offset: 4) }
        guard let encapsulation = CaptureFormat.encapsulation(linktype: linktype) else {
            throw CaptureProblem(.unsupportedLinktype(linktype), offset: 20)
        }
        self.encapsulation = encapsulation
        format = .pcap(linktype: linktype, nanoseconds: nanoseconds, bigEndian: bigEndian)
    }

    func next() -> HCIRecord? {
        while !stopped {
            let recordOffset = input.offset
            guard let header = input.read(16) else {
                if !input.atEnd { stop(input.shortHeader("record header", needed: 16, frame: frames + 1, at: recordOffset)) }
                stopped = true
                return nil
            }
            frames += 1
            var cursor = ByteCursor(header)
            let seconds = cursor.u32(bigEndian: bigEndian)!
            let fraction = cursor.u32(bigEndian: bigEndian)!
            let includedLength = cursor.u32(bigEndian: bigEndian)!
            let originalLength = cursor.u32(bigEndian: bigEndian)!
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
            let (unwrapped, problem) = encapsulation.unwrap(data, originalLength: Int(originalLength), flags: 0)
            if let problem { problems.add(CaptureProblem(problem, frame: frames, offset: recordOffset)) }
            guard let unwrapped else { continue }
            let timestamp = Int64(seconds) * 1_000_000 + Int64(nanoseconds ? fraction / 1000 : fraction)
            return HCIRecord(
                frame: frames, timestamp: timestamp, direction: unwrapped.direction, controller: unwrapped.controller,
                kind: unwrapped.kind, payload: unwrapped.payload, originalLength: unwrapped.originalLength,
                fileOffset: recordOffset)
        }
        return nil
    }

    private func stop(_ problem: CaptureProblem) {
        problems.add(problem)
        stopped = true
    }
}
