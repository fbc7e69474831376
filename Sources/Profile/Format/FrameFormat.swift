/// How a characteristic's writes carry frames with a length field (`"frames"`): the engine joins writes
/// until a frame is whole and hands rules one frame at a time, so a frame may arrive in pieces of the
/// central's ATT MTU − 3 bytes and several frames may share one write.
///
/// A frame is `headerSize` bytes, of which `lengthSize` bytes (big-endian) at `lengthOffset` count the bytes
/// after the header. Bytes that cannot start a frame (not one of `start`, or a length beyond the
/// characteristic's `maxLength`) go to the rules as written, at once.
public struct FrameFormat: Sendable, Equatable {
    public var lengthOffset: Int
    public var lengthSize: Int
    public var headerSize: Int
    /// The bytes a frame may start with; empty: any.
    public var start: [UInt8]

    public init(lengthOffset: Int, lengthSize: Int, headerSize: Int, start: [UInt8] = []) {
        self.lengthOffset = lengthOffset
        self.lengthSize = lengthSize
        self.headerSize = headerSize
        self.start = start
    }

    /// What the bytes held so far begin with.
    public enum Head: Equatable {
        /// Not a frame's start: hand them to the rules as they are.
        case notAFrame
        /// Too few bytes to read the length yet.
        case incomplete
        /// A frame of this many bytes.
        case frame(size: Int)
    }

    /// Reads the head of `bytes`; a frame longer than `limit` is `notAFrame`.
    public func head(of bytes: ArraySlice<UInt8>, limit: Int) -> Head {
        guard let first = bytes.first else { return .incomplete }
        if !start.isEmpty, !start.contains(first) { return .notAFrame }
        guard bytes.count >= lengthOffset + lengthSize else { return .incomplete }
        let field = bytes.dropFirst(lengthOffset).prefix(lengthSize)
        let length = field.reduce(0) { $0 << 8 | Int($1) }
        let size = headerSize + length
        return size <= limit ? .frame(size: size) : .notAFrame
    }
}
