/// Joins ACL fragments into L2CAP PDUs per (controller, handle, direction): a start fragment (packet
/// boundary 0b00, 0b10 or 0b11) opens a PDU whose basic-header length says how long it is; continuation
/// fragments (0b01) add to it until it is complete.
struct ACLReassembler {
    struct Stream: Hashable {
        var controller: UInt16
        var handle: UInt16
        var direction: HCIDirection
    }

    /// A complete L2CAP PDU (basic header included).
    struct Complete {
        var bytes: ArraySlice<UInt8>
        var firstFrame: Int
    }

    private struct Pending {
        var bytes: [UInt8]
        /// Header included; nil until the 4-byte basic header is in.
        var expected: Int?
        var firstFrame: Int
    }

    private var pending: [Stream: Pending] = [:]

    /// The most PDUs reassembled at once, and the most bytes they hold together: a capture claiming long PDUs
    /// on many handles whose fragments never come cannot make memory grow without bound. Real traffic has one
    /// PDU pending per link and direction at most, each of at most 65,539 bytes (a 64 KiB basic frame).
    static let streamLimit = 64
    static let byteLimit = 1 << 20

    /// PDUs pending now.
    var pendingStreams: Int { pending.count }
    /// Bytes the pending PDUs have received (what arrived, never what their headers claim).
    private(set) var pendingBytes = 0
    /// Bytes their buffers hold room for.
    var pendingCapacity: Int { pending.values.reduce(0) { $0 + $1.bytes.capacity } }

    /// Feeds one fragment (the ACL data after its 4-byte header); the result is a complete PDU, nothing
    /// yet, and problems (the fragment dropped, or pending PDUs: replaced, or the oldest dropped to keep within
    /// ``streamLimit`` and ``byteLimit``).
    mutating func add(_ data: ArraySlice<UInt8>, boundary: UInt8, stream: Stream, frame: Int) -> (Complete?, [CaptureProblem.Reason]) {
        if boundary != 0b01 {
            var problems: [CaptureProblem.Reason] = []
            if let old = remove(stream) {
                problems.append(.startWhileIncomplete(handle: stream.handle, received: old.bytes.count, expected: old.expected ?? 0))
            }
            guard data.count >= 4 else {
                return (nil, problems + store(Pending(bytes: Array(data), expected: nil, firstFrame: frame), on: stream))
            }
            let expected = Self.expectedLength(data)
            if data.count == expected { return (Complete(bytes: data, firstFrame: frame), problems) }
            if data.count > expected {
                return (
                    nil, problems.isEmpty ? [.oversizeFragment(handle: stream.handle, expected: expected, received: data.count)] : problems
                )
            }
            return (nil, problems + store(Pending(bytes: Array(data), expected: expected, firstFrame: frame), on: stream))
        }
        guard var current = remove(stream) else {
            return (nil, [.continuationWithoutStart(handle: stream.handle)])
        }
        current.bytes.append(contentsOf: data)
        if current.expected == nil, current.bytes.count >= 4 { current.expected = Self.expectedLength(current.bytes[...]) }
        if let expected = current.expected {
            if current.bytes.count > expected {
                return (nil, [.oversizeFragment(handle: stream.handle, expected: expected, received: current.bytes.count)])
            }
            if current.bytes.count == expected { return (Complete(bytes: current.bytes[...], firstFrame: current.firstFrame), []) }
        }
        return (nil, store(current, on: stream))
    }

    /// Drops what is pending on a handle (disconnection, reset); returns the incomplete PDUs as problems.
    mutating func drop(controller: UInt16, handle: UInt16?) -> [CaptureProblem.Reason] {
        let streams = pending.keys.filter { $0.controller == controller && (handle == nil || $0.handle == handle) }
        return streams.sorted { pending[$0]!.firstFrame < pending[$1]!.firstFrame }.map { stream in
            let old = remove(stream)!
            return .incompleteAtEnd(handle: stream.handle, received: old.bytes.count, expected: old.expected ?? 0)
        }
    }

    /// What is still pending at the end of the capture, with the frames they began in.
    mutating func finish() -> [(CaptureProblem.Reason, Int)] {
        let streams = pending.keys.sorted { pending[$0]!.firstFrame < pending[$1]!.firstFrame }
        defer {
            pending = [:]
            pendingBytes = 0
        }
        return streams.map { stream in
            let old = pending[stream]!
            return (.incompleteAtEnd(handle: stream.handle, received: old.bytes.count, expected: old.expected ?? 0), old.firstFrame)
        }
    }

    /// Drops a stream's pending PDU silently (a truncated record broke it).
    mutating func discard(_ stream: Stream) { _ = remove(stream) }

    /// Keeps `entry` pending on `stream`, first dropping the oldest pending PDUs while it would make more than
    /// ``streamLimit`` of them or more than ``byteLimit`` bytes; returns those as problems.
    private mutating func store(_ entry: Pending, on stream: Stream) -> [CaptureProblem.Reason] {
        var dropped: [CaptureProblem.Reason] = []
        while pending.count >= Self.streamLimit || (!pending.isEmpty && pendingBytes + entry.bytes.count > Self.byteLimit) {
            let oldest = pending.min { $0.value.firstFrame < $1.value.firstFrame }!.key
            let old = remove(oldest)!
            dropped.append(.reassemblyLimit(handle: oldest.handle, received: old.bytes.count, expected: old.expected ?? 0))
        }
        pending[stream] = entry
        pendingBytes += entry.bytes.count
        return dropped
    }

    private mutating func remove(_ stream: Stream) -> Pending? {
        guard let old = pending.removeValue(forKey: stream) else { return nil }
        pendingBytes -= old.bytes.count
        return old
    }

    private static func expectedLength(_ bytes: ArraySlice<UInt8>) -> Int {
        4 + (Int(bytes[bytes.startIndex]) | Int(bytes[bytes.startIndex + 1]) << 8)
    }
}
