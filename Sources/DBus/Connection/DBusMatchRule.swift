/// A signal match rule, sent to the bus with `AddMatch` and applied again locally.
public struct DBusMatchRule: Sendable, Hashable, CustomStringConvertible {
    public var sender: String?
    public var path: DBusObjectPath?
    /// Matches `pathNamespace` and every path below it.
    public var pathNamespace: DBusObjectPath?
    public var interface: String?
    public var member: String?
    /// Matches when the first argument is this string.
    public var arg0: String?

    public init(
        sender: String? = nil, path: DBusObjectPath? = nil, pathNamespace: DBusObjectPath? = nil,
        interface: String? = nil, member: String? = nil, arg0: String? = nil
    ) {
        self.sender = sender
        self.path = path
        self.pathNamespace = pathNamespace
        self.interface = interface
        self.member = member
        self.arg0 = arg0
    }

    /// The rule in the bus's syntax, e.g. `type='signal',interface='org.freedesktop.DBus'`.
    public var description: String {
        var parts = ["type='signal'"]
        func add(_ key: String, _ value: String?) {
            guard let value else { return }
            parts.append("\(key)='\(value.replacing("'", with: "'\\''"))'")
        }
        add("sender", sender)
        add("path", path?.rawValue)
        add("path_namespace", pathNamespace?.rawValue)
        add("interface", interface)
        add("member", member)
        add("arg0", arg0)
        return parts.joined(separator: ",")
    }

    /// Whether `signal` matches; a well-known `sender` name is not checked locally (the bus routes by it).
    public func matches(_ signal: DBusSignal) -> Bool {
        if let sender, sender.hasPrefix(":"), signal.sender != sender { return false }
        if let path, signal.path != path { return false }
        if let pathNamespace, !signal.path.isDescendant(of: pathNamespace) { return false }
        if let interface, signal.interface != interface { return false }
        if let member, signal.member != member { return false }
        if let arg0, signal.arguments.first?.string != arg0 { return false }
        return true
    }
}

/// A signal received from the bus.
public struct DBusSignal: Sendable, Equatable {
    public var sender: String
    public var path: DBusObjectPath
    public var interface: String
    public var member: String
    public var arguments: [DBusValue]

    public init(sender: String, path: DBusObjectPath, interface: String, member: String, arguments: [DBusValue]) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }
}
