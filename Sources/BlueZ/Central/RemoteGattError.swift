import Bluetooth
import DBus
import TextEscaping

/// An error BlueZ answered a remote GATT operation with (`ReadValue`, `StartNotify`, `AcquireNotify`), with
/// the ATT error the device sent as far as BlueZ's error tells it.
///
/// BlueZ (`create_gatt_dbus_error` in src/gatt-client.c, 5.66 and 5.82) maps ATT errors to D-Bus errors:
/// insufficient authentication, encryption and encryption key size all become `NotPermitted` "Not paired"
/// (taken here as insufficient authentication, what a link without keys gets), read/write not permitted
/// `NotPermitted`, authorization `NotAuthorized`, invalid offset and length `InvalidArguments`, request not
/// supported `NotSupported`, and any other code `Failed` "Operation failed with ATT error: 0xNN".
public struct RemoteGattError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The D-Bus error name, e.g. `org.bluez.Error.NotPermitted`.
    public var name: String
    /// Its message, bounded and printable.
    public var message: String
    /// The device's ATT error, when the D-Bus error carries one.
    public var attError: ATTErrorCode?

    public init(_ error: DBusError) {
        switch error {
        case .named(let name, let message):
            self.name = TerminalText.escaped(name, limit: 80)
            self.message = TerminalText.escaped(message, limit: 160)
        default:
            name = DBusError.Name.failed
            message = TerminalText.escaped(error.description, limit: 160)
        }
        attError = Self.attError(name: name, message: message)
    }

    /// Whether the device asked for pairing or encryption first.
    public var asksForSecurity: Bool { attError?.asksForSecurity ?? false }

    /// Whether the request certainly got no answer from the device: no reply in time, or bluetoothd had no ATT
    /// bearer to send it on ("Not connected", which BlueZ also says when the bearer went while the link stays up).
    public var isNoAnswer: Bool {
        name == DBusError.Name.noReply || (name == "org.bluez.Error.Failed" && message.lowercased().hasPrefix("not connected"))
    }

    /// Whether the error may not be the device's answer: ``isNoAnswer``, or ATT Unlikely Error, which BlueZ makes up
    /// for a request pending on a bearer that closed (att.c) and some devices answer too.
    public var mayNotBeTheDevicesAnswer: Bool { isNoAnswer || attError == .unlikelyError }

    public var description: String {
        let short = name.split(separator: ".").last.map(String.init) ?? name
        return message.isEmpty ? short : "\(short): \(message)" + (attError.map { " (ATT \($0))" } ?? "")
    }

    static func attError(name: String, message: String) -> ATTErrorCode? {
        let lower = message.lowercased()
        switch name {
        case "org.bluez.Error.NotPermitted":
            if lower.contains("read not permitted") { return .readNotPermitted }
            if lower.contains("write not permitted") { return .writeNotPermitted }
            if lower.contains("pair") || lower.contains("authenticat") || lower.contains("encrypt") { return .insufficientAuthentication }
            return nil
        case "org.bluez.Error.NotAuthorized": return .insufficientAuthorization
        case "org.bluez.Error.NotSupported": return .requestNotSupported
        case "org.bluez.Error.InvalidArguments", DBusError.Name.invalidArgs:
            if lower.contains("offset") { return .invalidOffset }
            if lower.contains("length") { return .invalidAttributeValueLength }
            return nil
        case "org.bluez.Error.Failed":
            guard let range = lower.firstRange(of: "att error: 0x") else { return nil }
            let digits = lower[range.upperBound...].prefix(2)
            guard digits.count == 2, let code = UInt8(digits, radix: 16), code != 0 else { return nil }
            return ATTErrorCode(rawValue: code)
        default: return nil
        }
    }
}
