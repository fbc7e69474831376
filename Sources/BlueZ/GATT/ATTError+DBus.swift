import Bluetooth
import DBus

extension ATTError {
    /// The `org.bluez.Error.*` reply that makes bluetoothd answer the central with this error.
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
}
