/// An SDU of an LE credit-based channel (a connection-oriented channel an app opened on a PSM), put together from
/// its K-frames; EATT's channels (ATT) are decoded as ATT instead.
public struct ChannelSDU: Sendable, Hashable {
    /// The frame of its last K-frame.
    public var frame: Int
    public var timestamp: Int64?
    public var connection: Int
    public var sender: HCIDirection
    public var direction: LinkDirection
    /// The PSM the channel was opened on.
    public var psm: UInt16
    /// The channel identifier the SDU was sent to (the receiver's), which tells a connection's channels apart.
    public var channel: UInt16
    public var value: [UInt8]
}

/// SDUs being put together, per channel: the length the first K-frame announced and the bytes so far. At most
/// ``maximumChannels`` at once (a capture that opens more channels mid-SDU loses the newer ones' SDUs, noted).
struct ChannelSDUAssembler {
    static let maximumChannels = 64

    struct Partial {
        var length: Int
        var bytes: [UInt8]
    }

    var partial: [CaptureDecoder.ChannelKey: Partial] = [:]

    enum Outcome: Equatable {
        case sdu([UInt8])
        case incomplete
        /// A K-frame that fits no SDU (too short for the length, or more than the length): dropped.
        case malformed(String)
        case tooManyChannels
    }

    mutating func add(_ frame: ArraySlice<UInt8>, key: CaptureDecoder.ChannelKey) -> Outcome {
        if var current = partial[key] {
            current.bytes += frame
            guard current.bytes.count <= current.length else {
                partial[key] = nil
                return .malformed("K-frames carry \(current.bytes.count) bytes of an SDU of \(current.length)")
            }
            if current.bytes.count == current.length {
                partial[key] = nil
                return .sdu(current.bytes)
            }
            partial[key] = current
            return .incomplete
        }
        guard frame.count >= 2 else { return .malformed("a first K-frame without its SDU length") }
        let length = Int(frame[frame.startIndex]) | Int(frame[frame.startIndex + 1]) << 8
        let bytes = Array(frame.dropFirst(2))
        guard bytes.count <= length else { return .malformed("a K-frame of \(bytes.count) bytes for an SDU of \(length)") }
        if bytes.count == length { return .sdu(bytes) }
        guard partial.count < Self.maximumChannels else { return .tooManyChannels }
        partial[key] = Partial(length: length, bytes: bytes)
        return .incomplete
    }
}
