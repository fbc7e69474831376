/// An LE signalling command (L2CAP CID 0x0005): connection parameter updates and LE credit-based channel requests and
/// responses are decoded (those channels' SDUs are ``ChannelSDU``s; EATT's are decoded as ATT elsewhere, or noted).
public struct L2CAPSignal: Sendable, Hashable {
    public var frame: Int
    public var timestamp: Int64?
    public var connection: Int
    public var sender: HCIDirection
    public var direction: LinkDirection
    public var identifier: UInt8
    public var message: Message

    /// The command, decoded where it matters here.
    public enum Message: Sendable, Hashable {
        /// Intervals in 1.25 ms units, timeout in 10 ms units.
        case connectionParameterUpdateRequest(intervalMin: UInt16, intervalMax: UInt16, latency: UInt16, timeout: UInt16)
        case connectionParameterUpdateResponse(accepted: Bool)
        /// LE credit-based (code 0x14) or enhanced credit-based (0x17) connection request; PSM 0x0027 is EATT.
        case creditBasedConnectionRequest(psm: UInt16, enhanced: Bool)
        /// LE credit-based connection response (0x15): the responder's channel, its MTU, and the result (0: success).
        case creditBasedConnectionResponse(destination: UInt16, mtu: UInt16, result: UInt16)
        case other(code: UInt8)
    }
}

/// PSMs worth naming.
enum L2CAPPSM {
    static let att: UInt16 = 0x001F
    static let eatt: UInt16 = 0x0027
}

/// Fixed L2CAP channel identifiers.
enum L2CAPChannel {
    static let classicSignalling: UInt16 = 0x0001
    static let att: UInt16 = 0x0004
    static let leSignalling: UInt16 = 0x0005
    static let smp: UInt16 = 0x0006
    static let firstDynamic: UInt16 = 0x0040
}
