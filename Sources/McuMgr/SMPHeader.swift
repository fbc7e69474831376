/// The 8-byte header of an SMP (mcumgr) packet: operation and protocol version, flags, body length, group,
/// sequence number and command. Multi-byte fields are big-endian.
public struct SMPHeader: Sendable, Equatable {
    public enum Operation: UInt8, Sendable {
        case read = 0
        case readResponse = 1
        case write = 2
        case writeResponse = 3

        /// The operation that answers this one (a response answers itself: never sent).
        public var response: Operation {
            switch self {
            case .read, .readResponse: .readResponse
            case .write, .writeResponse: .writeResponse
            }
        }

        public var isRequest: Bool { self == .read || self == .write }
    }

    public static let size = 8

    public var operation: Operation
    /// 0 for SMP version 1, 1 for version 2 (which reports errors as `{"err": {"group", "rc"}}`).
    public var version: UInt8
    public var flags: UInt8
    /// The body's length in bytes.
    public var length: UInt16
    public var group: UInt16
    public var sequence: UInt8
    public var command: UInt8

    public init(
        operation: Operation, version: UInt8 = 1, flags: UInt8 = 0, length: UInt16 = 0, group: UInt16, sequence: UInt8 = 0,
        command: UInt8
    ) {
        self.operation = operation
        self.version = version
        self.flags = flags
        self.length = length
        self.group = group
        self.sequence = sequence
        self.command = command
    }

    /// The header at the start of `bytes`; nil when fewer than 8 bytes or the operation is not one of the four.
    public init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count >= Self.size else { return nil }
        let b = Array(bytes.prefix(Self.size))
        guard let operation = Operation(rawValue: b[0] & 0x07) else { return nil }
        self.operation = operation
        version = (b[0] >> 3) & 0x03
        flags = b[1]
        length = UInt16(b[2]) << 8 | UInt16(b[3])
        group = UInt16(b[4]) << 8 | UInt16(b[5])
        sequence = b[6]
        command = b[7]
    }

    public var bytes: [UInt8] {
        [
            (version & 0x03) << 3 | operation.rawValue, flags, UInt8(length >> 8), UInt8(truncatingIfNeeded: length),
            UInt8(group >> 8), UInt8(truncatingIfNeeded: group), sequence, command,
        ]
    }

    /// The header of the answer to this request: the response operation, same version, group, sequence and command.
    public func answer(length: Int) -> SMPHeader {
        SMPHeader(
            operation: operation.response, version: version, flags: 0, length: UInt16(clamping: length), group: group,
            sequence: sequence, command: command)
    }
}

/// One SMP packet: its header and its CBOR body's bytes.
public struct SMPPacket: Sendable, Equatable {
    public var header: SMPHeader
    public var body: [UInt8]

    public init(header: SMPHeader, body: [UInt8]) {
        self.header = header
        self.body = body
    }

    /// A client's request: `operation` (read or write) of `command` in `group`, with `body` encoded and its length in
    /// the header (what tests, fixtures and benchmarks send a target).
    public init(
        request operation: SMPHeader.Operation, group: UInt16, command: UInt8, sequence: UInt8, version: UInt8 = 1, body: CBOR
    ) {
        let bytes = body.encoded
        self.init(
            header: SMPHeader(
                operation: operation, version: version, length: UInt16(clamping: bytes.count), group: group, sequence: sequence,
                command: command),
            body: bytes)
    }

    /// The packet answering `request` with `body` (encoded).
    public init(answering request: SMPHeader, body: CBOR) {
        let bytes = body.encoded
        self.init(header: request.answer(length: bytes.count), body: bytes)
    }

    /// Header and body, as written or notified.
    public var bytes: [UInt8] { header.bytes + body }
}
