/// One interface an exported object implements: methods, properties and the signals it may emit.
///
/// Property getters run on the connection's thread and must be quick and non-blocking.
public struct DBusInterface: Sendable {
    public var name: String
    public var methods: [DBusMethod]
    public var properties: [DBusProperty]
    public var signals: [DBusSignalDescription]

    public init(name: String, methods: [DBusMethod] = [], properties: [DBusProperty] = [], signals: [DBusSignalDescription] = []) {
        self.name = name
        self.methods = methods
        self.properties = properties
        self.signals = signals
    }

    /// The current values of every property.
    public func propertyValues() -> [String: DBusValue] {
        var values: [String: DBusValue] = [:]
        for property in properties {
            if let value = property.get() { values[property.name] = value }
        }
        return values
    }
}

/// An exported method; its handler gets the call and returns the reply's arguments or throws.
///
/// A thrown ``DBusError/named(_:message:)`` becomes that D-Bus error; any other error becomes
/// `org.freedesktop.DBus.Error.Failed` with the error's description.
public struct DBusMethod: Sendable {
    public var name: String
    /// The argument types the method accepts; calls with other arguments get `InvalidArgs`.
    public var inputSignature: DBusSignature
    public var outputSignature: DBusSignature
    public var handler: @Sendable (DBusMethodCall) async throws -> [DBusValue]

    public init(
        _ name: String, input: DBusSignature = "", output: DBusSignature = "",
        handler: @escaping @Sendable (DBusMethodCall) async throws -> [DBusValue]
    ) {
        self.name = name
        self.inputSignature = input
        self.outputSignature = output
        self.handler = handler
    }
}

/// An exported property; `get` returns nil when the property is currently absent.
public struct DBusProperty: Sendable {
    public var name: String
    public var signature: DBusSignature
    public var get: @Sendable () -> DBusValue?
    /// Present for writable properties.
    public var set: (@Sendable (DBusValue) throws -> Void)?

    public init(
        _ name: String, signature: DBusSignature, get: @escaping @Sendable () -> DBusValue?,
        set: (@Sendable (DBusValue) throws -> Void)? = nil
    ) {
        self.name = name
        self.signature = signature
        self.get = get
        self.set = set
    }

    /// A read-only property with a fixed value.
    public static func constant(_ name: String, _ value: DBusValue) -> DBusProperty {
        DBusProperty(name, signature: value.signature, get: { value })
    }
}

/// A signal an interface declares, for introspection.
public struct DBusSignalDescription: Sendable {
    public var name: String
    public var signature: DBusSignature

    public init(_ name: String, signature: DBusSignature = "") {
        self.name = name
        self.signature = signature
    }
}

/// Who may call an exported object; others get `org.freedesktop.DBus.Error.AccessDenied`.
public struct DBusCallerPolicy: Sendable {
    /// Decides from the caller's unique bus name (nil when the message has no sender).
    public let allows: @Sendable (String?) -> Bool

    public init(allows: @escaping @Sendable (String?) -> Bool) { self.allows = allows }

    public static let anyone = DBusCallerPolicy { _ in true }
}
