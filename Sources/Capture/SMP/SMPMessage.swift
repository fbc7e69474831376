import Bluetooth

/// A Security Manager Protocol PDU decoded (Core spec Vol 3 Part H 3.5–3.6). Key material (LTK, IRK, CSRK,
/// confirm and random values, public keys) is not kept: only which message it was.
public enum SMPMessage: Sendable, Hashable {
    case pairingRequest(SMPPairingFeatures)
    case pairingResponse(SMPPairingFeatures)
    case pairingConfirm
    case pairingRandom
    case pairingFailed(SMPFailureReason)
    case encryptionInformation
    case centralIdentification
    case identityInformation
    /// The identity address is kept: it names the device, it is no key.
    case identityAddressInformation(DeviceAddress?)
    case signingInformation
    case securityRequest(SMPAuthRequirements)
    case pairingPublicKey
    case dhKeyCheck
    case keypressNotification(type: UInt8)
    case unknown(code: UInt8)
    case malformed(code: UInt8, String)

    /// Decodes an SMP PDU (code byte first).
    public init(_ pdu: ArraySlice<UInt8>) {
        var cursor = ByteCursor(pdu)
        guard let code = cursor.u8() else {
            self = .malformed(code: 0, "empty PDU")
            return
        }
        let expected: [UInt8: Int] = [
            0x01: 6, 0x02: 6, 0x03: 16, 0x04: 16, 0x05: 1, 0x06: 16, 0x07: 10, 0x08: 16, 0x09: 7,
            0x0A: 16, 0x0B: 1, 0x0C: 64, 0x0D: 16, 0x0E: 1,
        ]
        guard let length = expected[code] else {
            self = .unknown(code: code)
            return
        }
        guard cursor.remaining == length else {
            self = .malformed(code: code, "\(cursor.remaining) parameter bytes, \(length) expected")
            return
        }
        switch code {
        case 0x01, 0x02:
            let features = SMPPairingFeatures(
                ioCapability: IOCapability(rawValue: cursor.u8()!), oobDataPresent: cursor.u8()! != 0,
                authRequirements: SMPAuthRequirements(rawValue: cursor.u8()!), maximumKeySize: cursor.u8()!,
                initiatorKeys: SMPKeyDistribution(rawValue: cursor.u8()!), responderKeys: SMPKeyDistribution(rawValue: cursor.u8()!))
            self = code == 0x01 ? .pairingRequest(features) : .pairingResponse(features)
        case 0x03: self = .pairingConfirm
        case 0x04: self = .pairingRandom
        case 0x05: self = .pairingFailed(SMPFailureReason(rawValue: cursor.u8()!))
        case 0x06: self = .encryptionInformation
        case 0x07: self = .centralIdentification
        case 0x08: self = .identityInformation
        case 0x09:
            let type = cursor.u8()!
            self = .identityAddressInformation(cursor.address().flatMap { DeviceAddress($0, hciType: type) })
        case 0x0A: self = .signingInformation
        case 0x0B: self = .securityRequest(SMPAuthRequirements(rawValue: cursor.u8()!))
        case 0x0C: self = .pairingPublicKey
        case 0x0D: self = .dhKeyCheck
        default: self = .keypressNotification(type: cursor.u8()!)
        }
    }

    /// The SMP code.
    public var code: UInt8 {
        switch self {
        case .pairingRequest: 0x01
        case .pairingResponse: 0x02
        case .pairingConfirm: 0x03
        case .pairingRandom: 0x04
        case .pairingFailed: 0x05
        case .encryptionInformation: 0x06
        case .centralIdentification: 0x07
        case .identityInformation: 0x08
        case .identityAddressInformation: 0x09
        case .signingInformation: 0x0A
        case .securityRequest: 0x0B
        case .pairingPublicKey: 0x0C
        case .dhKeyCheck: 0x0D
        case .keypressNotification: 0x0E
        case .unknown(let code), .malformed(let code, _): code
        }
    }

    /// Whether it distributes a key (the key itself is not kept).
    public var isKeyDistribution: Bool { [0x06, 0x07, 0x08, 0x09, 0x0A].contains(code) }
}

/// Pairing Request / Response features.
public struct SMPPairingFeatures: Sendable, Hashable {
    public var ioCapability: IOCapability
    public var oobDataPresent: Bool
    public var authRequirements: SMPAuthRequirements
    public var maximumKeySize: UInt8
    public var initiatorKeys: SMPKeyDistribution
    public var responderKeys: SMPKeyDistribution
}

/// The AuthReq bits: bonding, MITM, LE Secure Connections, keypress notifications, CT2.
public struct SMPAuthRequirements: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Bonding flags 0b01.
    public static let bonding = SMPAuthRequirements(rawValue: 0x01)
    public static let mitm = SMPAuthRequirements(rawValue: 0x04)
    public static let secureConnections = SMPAuthRequirements(rawValue: 0x08)
    public static let keypress = SMPAuthRequirements(rawValue: 0x10)
    public static let ct2 = SMPAuthRequirements(rawValue: 0x20)
}

/// Which keys a side distributes: encryption key (LTK), identity key (IRK), signing key (CSRK), link key.
public struct SMPKeyDistribution: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let encryptionKey = SMPKeyDistribution(rawValue: 0x01)
    public static let identityKey = SMPKeyDistribution(rawValue: 0x02)
    public static let signingKey = SMPKeyDistribution(rawValue: 0x04)
    public static let linkKey = SMPKeyDistribution(rawValue: 0x08)
}

/// Why pairing failed (0x01 passkey entry failed … 0x0E key rejected).
public struct SMPFailureReason: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    private static let names: [UInt8: String] = [
        0x01: "passkey entry failed", 0x02: "OOB not available", 0x03: "authentication requirements",
        0x04: "confirm value failed", 0x05: "pairing not supported", 0x06: "encryption key size",
        0x07: "command not supported", 0x08: "unspecified reason", 0x09: "repeated attempts", 0x0A: "invalid parameters",
        0x0B: "DHKey check failed", 0x0C: "numeric comparison failed", 0x0D: "BR/EDR pairing in progress",
        0x0E: "cross-transport key derivation not allowed", 0x0F: "key rejected",
    ]

    public var description: String { Self.names[rawValue] ?? "SMP reason 0x" + Hex.byte(rawValue) }
}

/// One SMP PDU on a connection.
public struct SMPPDU: Sendable, Hashable {
    public var frame: Int
    public var timestamp: Int64?
    public var connection: Int
    public var sender: HCIDirection
    public var direction: LinkDirection
    public var message: SMPMessage
}
