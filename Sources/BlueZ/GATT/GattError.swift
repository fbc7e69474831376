import DBus

/// An error a GATT handler returns to the central, as BlueZ maps it to an ATT error code.
public enum GattError: Error, Sendable, Equatable, CustomStringConvertible {
    case failed
    case inProgress
    case notPermitted
    case notAuthorized
    case invalidOffset
    case invalidValueLength
    case notSupported
    /// An application error code, 0x80 through 0x9F.
    case application(UInt8)

    /// The `org.bluez.Error.*` reply that makes bluetoothd answer with this error.
    public var dbusError: DBusError {
        switch self {
        case .failed: .named("org.bluez.Error.Failed", message: "Failed")
        case .inProgress: .named("org.bluez.Error.InProgress", message: "In progress")
        case .notPermitted: .named("org.bluez.Error.NotPermitted", message: "Not permitted")
        case .notAuthorized: .named("org.bluez.Error.NotAuthorized", message: "Not authorized")
        case .invalidOffset: .named("org.bluez.Error.InvalidOffset", message: "Invalid offset")
        case .invalidValueLength: .named("org.bluez.Error.InvalidValueLength", message: "Invalid value length")
        case .notSupported: .named("org.bluez.Error.NotSupported", message: "Not supported")
        case .application(let code): .named("org.bluez.Error.Failed", message: code.hexLiteral(digits: 2))
        }
    }

    public var description: String {
        switch self {
        case .failed: "failed"
        case .inProgress: "in-progress"
        case .notPermitted: "not-permitted"
        case .notAuthorized: "not-authorized"
        case .invalidOffset: "invalid-offset"
        case .invalidValueLength: "invalid-value-length"
        case .notSupported: "not-supported"
        case .application(let code): code.hexLiteral(digits: 2)
        }
    }
}
