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

    /// Feeds one fragment (the ACL data after its 4-byte header); the result is a complete PDU, nothing
    /// yet, or a problem (the fragment or the pending PDU dropped).
    mutating func add(_ data: ArraySlice<UInt8>, boundary: UInt8, stream: Stream, frame: Int) -> (Complete?, CaptureProblem.Reason?) {
        var problem: CaptureProblem.Reason?
        if boundary != 0b01 {
            if let old = pending.removeValue(forKey: stream) {
                problem = .startWhileIncomplete(handle: stream.handle, received: old.bytes.count, expected: old.expected ?? 0)
            }
            guard data.count >= 4 else {
                pending[stream] = Pending(bytes: Array(data), expected: nil, firstFrame: frame)
                return (nil, problem)
            }
            let expected = Self.expectedLength(data)
            if data.count == expected { return (Complete(bytes: data, firstFrame: frame), problem) }
            if data.count > expected {
                return (nil, problem ?? .oversizeFragment(handle: stream.handle, expected: expected, received: data.count))
            }
            var bytes = [UInt8]()
            bytes.reserveCapacity(expected)
            bytes.append(contentsOf: data)
            pending[stream] = Pending(bytes: bytes, expected: expected, firstFrame: frame)
            return (nil, problem)
        }
        guard var current = pending.removeValue(forKey: stream) else {
            return (nil, .continuationWithoutStart(handle: stream.handle))
        }
        current.bytes.append(contentsOf: data)
        if current.expected == nil, current.bytes.count >= 4 { current.expected = Self.expectedLength(current.bytes[...]) }
        guard let expected = current.expected else {
            pending[stream] = current
            return (nil, nil)
        }
        if current.bytes.count > expected {
            return (nil, .oversizeFragment(handle: stream.handle, expected: expected, received: current.bytes.count))
        }
        if current.bytes.count == expected { return (Complete(bytes: current.bytes[...], firstFrame: current.firstFrame), nil) }
        pending[stream] = current
        return (nil, nil)
    }

    /// Drops what is pending on a handle (disconnection, reset); returns the incomplete PDUs as problems.
    mutating func drop(controller: UInt16, handle: UInt16?) -> [CaptureProblem.Reason] {
        let streams = pending.keys.filter { $0.controller == controller && (handle == nil || $0.handle == handle) }
        return streams.sorted { pending[$0]!.firstFrame < pending[$1]!.firstFrame }.map { stream in
            let old = pending.removeValue(forKey: stream)!
            return .incompleteAtEnd(handle: stream.handle, received: old.bytes.count, expected: old.expected ?? 0)
        }
    }

    /// What is still pending at the end of the capture, with the frames they began in.
    mutating func finish() -> [(CaptureProblem.Reason, Int)] {
        let streams = pending.keys.sorted { pending[$0]!.firstFrame < pending[$1]!.firstFrame }
        defer { pending = [:] }
        return streams.map { stream in
            let old = pending[stream]!
            return (.incompleteAtEnd(handle: stream.handle, received: old.bytes.count, expected: old.expected ?? 0), old.firstFrame)
        }
    }

    /// Drops a stream's pending PDU silently (a truncated record broke it).
    mutating func discard(_ stream: Stream) { pending[stream] = nil }

    private static func expectedLength(_ bytes: ArraySlice<UInt8>) -> Int {
        4 + (Int(bytes[bytes.startIndex]) | Int(bytes[bytes.startIndex + 1]) << 8)
    }
}
