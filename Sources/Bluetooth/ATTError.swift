/// The error a GATT server answers a read or write with — the one vocabulary of profiles (`"fail"`), faults,
/// the behaviour engine and the BlueZ layer, which sends it as the matching `org.bluez.Error.*` reply.
///
/// ``code(writing:)`` is the ``ATTErrorCode`` the central then receives, as bluetoothd maps its D-Bus errors.
public enum ATTError: Error, Sendable, Hashable, CustomStringConvertible {
    case failed, inProgress, notPermitted, notAuthorized, invalidOffset, invalidValueLength, notSupported
    /// An application error code, 0x80…0x9F (sent as `org.bluez.Error.Failed` with message `0x80`).
    case application(UInt8)

    /// The errors with a name of their own (all but ``application(_:)``).
    public static let named: [ATTError] = [
        .failed, .inProgress, .notPermitted, .notAuthorized, .invalidOffset, .invalidValueLength, .notSupported,
    ]

    /// The names profiles and fault specs use, e.g. `not-permitted` (each error's ``description``).
    public static let namesInProfiles: [String: ATTError] = Dictionary(uniqueKeysWithValues: named.map { ($0.description, $0) })

    /// The application error codes.
    public static let applicationCodes: ClosedRange<UInt8> = 0x80...0x9F

    /// The error code the central receives: `notPermitted` is read or write not permitted as the operation was;
    /// `failed` is bluetoothd's stand-in application error 0x80 (an application error's own code when named).
    public func code(writing: Bool) -> ATTErrorCode {
        switch self {
        case .failed: ATTErrorCode(rawValue: 0x80)
        case .inProgress: ATTErrorCode(rawValue: 0xFE)
        case .notPermitted: writing ? .writeNotPermitted : .readNotPermitted
        case .notAuthorized: .insufficientAuthorization
        case .invalidOffset: .invalidOffset
        case .invalidValueLength: .invalidAttributeValueLength
        case .notSupported: .requestNotSupported
        case .application(let code): ATTErrorCode(rawValue: code)
        }
    }

    /// The error that makes the central receive `code` (the inverse of ``code(writing:)``), when a GATT server
    /// on BlueZ can send it at all; nil for the codes bluetoothd decides itself (insufficient authentication or
    /// encryption: a characteristic's security flags make bluetoothd send those) and for the reserved ones.
    public init?(sending code: ATTErrorCode) {
        switch code {
        case .readNotPermitted, .writeNotPermitted: self = .notPermitted
        case .insufficientAuthorization: self = .notAuthorized
        case .invalidOffset: self = .invalidOffset
        case .invalidAttributeValueLength: self = .invalidValueLength
        case .requestNotSupported: self = .notSupported
        case ATTErrorCode(rawValue: 0xFE): self = .inProgress
        default:
            guard Self.applicationCodes.contains(code.rawValue) else { return nil }
            self = .application(code.rawValue)
        }
    }

    /// `not-permitted`, …; `0x80` for an application error.
    public var description: String {
        switch self {
        case .failed: "failed"
        case .inProgress: "in-progress"
        case .notPermitted: "not-permitted"
        case .notAuthorized: "not-authorized"
        case .invalidOffset: "invalid-offset"
        case .invalidValueLength: "invalid-value-length"
        case .notSupported: "not-supported"
        case .application(let code): "0x" + HexDigits.pair(code)
        }
    }
}
