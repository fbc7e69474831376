/// Reads the HCI records of a capture file (btsnoop, pcap, pcapng or PacketLogger, told by its first bytes) one at a
/// time, with memory bounded by the longest record, whatever the file's size.
///
/// Damage never traps: ``next()`` returns nil at the first damage that stops reading, after every record
/// complete before it, and ``problems`` says where and why. Opening throws only when nothing can be read.
public final class CaptureReader: IteratorProtocol, Sequence {
    private let source: any RecordSource

    /// Opens a file.
    public convenience init(path: String) throws(CaptureProblem) {
        try self.init(input: ByteInput(path: path))
    }

    /// Reads a capture held in memory.
    public convenience init(bytes: [UInt8]) throws(CaptureProblem) {
        try self.init(input: ByteInput(bytes: bytes))
    }

    init(input: ByteInput) throws(CaptureProblem) {
        let available = input.fill(8)
        guard available > 0, let start = input.peek(available) else { throw CaptureProblem(.empty) }
        switch CaptureFormat.sniff(start) {
        case .btsnoop?: source = try BTSnoopReader(input)
        case .pcap(let bigEndian, let nanoseconds)?: source = try PcapReader(input, bigEndian: bigEndian, nanoseconds: nanoseconds)
        case .pcapng?: source = try PcapngReader(input)
        case nil:
            guard let bigEndian = PacketLoggerReader.sniff(input) else {
                throw CaptureProblem(.unknownFormat(firstBytes: Array(start)), offset: 0)
            }
            source = PacketLoggerReader(input, bigEndian: bigEndian)
        }
    }

    public var format: CaptureFormat { source.format }

    /// The btsnoop datalink, or the linktypes of pcap and of the pcapng interfaces met so far (none for PacketLogger).
    public var linktypes: [UInt32] { source.linktypes }

    /// Problems met so far, located (the first 1000; ``problemCount`` counts them all).
    public var problems: [CaptureProblem] { source.problems.kept }
    public var problemCount: Int { source.problems.count }

    /// Packet records met so far, including ones that were not HCI or were skipped: the last frame number.
    public var frames: Int { source.frames }

    /// What was skipped that is not damage (PacketLogger record types gattemu does not know).
    public var notes: [CaptureNote] { source.notes }

    /// The next HCI record; nil at the end of the file or at damage that stops reading.
    public func next() -> HCIRecord? { source.next() }
}
