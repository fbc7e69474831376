#if canImport(Glibc)
    import Glibc
#endif

/// Errors of the D-Bus layer; `named` is a D-Bus error both ways (a reply we got, or one a handler throws).
public enum DBusError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A D-Bus error such as `org.bluez.Error.Failed` with its message.
    case named(String, message: String)
    /// The connection to the bus is closed.
    case disconnected
    /// The bus could not be reached.
    case connectionFailed(String)
    /// A value or argument list that cannot be sent (bad signature, bad path, mismatched types).
    case invalidArgument(String)
    /// A reply or message whose contents are not what the caller expected.
    case unexpectedMessage(String)
    /// A system call failed.
    case system(String, errno: Int32)

    public var description: String {
        switch self {
        case .named(let name, let message): message.isEmpty ? name : "\(name): \(message)"
        case .disconnected: "disconnected from the bus"
        case .connectionFailed(let reason): "cannot connect to the bus: \(reason)"
        case .invalidArgument(let reason): "invalid D-Bus argument: \(reason)"
        case .unexpectedMessage(let reason): "unexpected D-Bus message: \(reason)"
        case .system(let call, let code): "\(call) failed: \(String(cString: strerror(code)))"
        }
    }

    /// The D-Bus error name, for `named` errors.
    public var name: String? {
        if case .named(let name, _) = self { return name }
        return nil
    }

    /// `org.freedesktop.DBus.Error.*` names this module uses.
    public enum Name {
        public static let failed = "org.freedesktop.DBus.Error.Failed"
        public static let accessDenied = "org.freedesktop.DBus.Error.AccessDenied"
        public static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
        public static let unknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
        public static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
        public static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
        public static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
        public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
        public static let noReply = "org.freedesktop.DBus.Error.NoReply"
        public static let serviceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"
        public static let nameHasNoOwner = "org.freedesktop.DBus.Error.NameHasNoOwner"
    }
}
