/// Puts SMP packets back together from what one central writes: a packet may span several writes (the header's
/// length says where it ends) and one write may end a packet and begin the next.
///
/// Bounded: a packet longer than ``capacity`` (the buffer size the device reports in its parameters) is never
/// buffered; its bytes are skipped as they come and it is reported once (``Piece/tooLong(_:)``), so the device can
/// answer it as a real one does, and what follows it is read again as packets.
public struct SMPReassembler: Sendable {
    public enum Piece: Sendable, Equatable {
        case packet(SMPPacket)
        /// A header whose packet does not fit the buffer (or an unknown operation): answered with an error, its body
        /// skipped.
        case tooLong(SMPHeader)
        /// Bytes that cannot begin a packet (an operation outside 0…3), dropped up to the end of the write.
        case garbage(Int)
    }

    /// The largest packet taken, header included.
    public let capacity: Int
    private var buffer: [UInt8] = []
    /// Body bytes of a too-long packet still to skip.
    private var skipping = 0

    public init(capacity: Int) { self.capacity = max(SMPHeader.size, capacity) }

    /// Bytes waiting for the rest of their packet.
    public var pending: Int { buffer.count }

    /// Nothing begun: no bytes waiting, no long packet being skipped.
    public var isIdle: Bool { buffer.isEmpty && skipping == 0 }

    /// Takes one write's bytes; returns the packets (and refusals) it completed, in order.
    public mutating func take(_ bytes: [UInt8]) -> [Piece] {
        var input = bytes[...]
        var pieces: [Piece] = []
        while !input.isEmpty {
            if skipping > 0 {
                let skipped = min(skipping, input.count)
                skipping -= skipped
                input = input.dropFirst(skipped)
                continue
            }
            let needed = SMPHeader.size - buffer.count
            if needed > 0 {
                let taken = input.prefix(needed)
                buffer += taken
                input = input.dropFirst(taken.count)
                guard buffer.count == SMPHeader.size else { break }
            }
            guard let header = SMPHeader(buffer) else {
                pieces.append(.garbage(buffer.count + input.count))
                buffer = []
                break
            }
            let total = SMPHeader.size + Int(header.length)
            guard total <= capacity else {
                pieces.append(.tooLong(header))
                buffer = []
                skipping = Int(header.length)
                continue
            }
            let taken = input.prefix(total - buffer.count)
            buffer += taken
            input = input.dropFirst(taken.count)
            if buffer.count == total {
                pieces.append(.packet(SMPPacket(header: header, body: Array(buffer[SMPHeader.size...]))))
                buffer = []
            }
        }
        return pieces
    }

    /// Forgets a packet begun (the central disconnected).
    public mutating func reset() {
        buffer = []
        skipping = 0
    }
}
