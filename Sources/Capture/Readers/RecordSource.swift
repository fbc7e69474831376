/// One container format's reader: yields HCI records until the input ends or damage stops it.
protocol RecordSource: AnyObject {
    var format: CaptureFormat { get }
    /// Linktypes (pcap, pcapng) or the datalink (btsnoop) met so far.
    var linktypes: [UInt32] { get }
    var problems: ProblemLog { get }
    /// Packet records met so far (the last frame number), HCI or not.
    var frames: Int { get }
    /// What the format's reader skipped that is not damage.
    var notes: [CaptureNote] { get }
    func next() -> HCIRecord?
}

extension RecordSource {
    var notes: [CaptureNote] { [] }
}

extension ByteInput {
    /// A header (starting at `offset`) that the input ends inside of; `needed` counts from the current position.
    func shortHeader(_ what: String, needed: Int, frame: Int?, at offset: Int) -> CaptureProblem {
        CaptureProblem(.truncatedHeader(what: what, needed: needed, available: fill(needed)), frame: frame, offset: offset)
    }

    /// A record's data (its header at `offset`) that the input ends inside of.
    func shortRecord(needed: Int, frame: Int?, at offset: Int) -> CaptureProblem {
        CaptureProblem(.truncatedRecord(needed: needed, available: fill(needed)), frame: frame, offset: offset)
    }
}
