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

    /// Whether `signal` matches. The sender is checked against who really sent it: a unique name as is,
    /// the bus's own name as is (only the bus sends as `org.freedesktop.DBus`), and another well-known name
    /// through `owner`, which gives that name's current unique owner (nil: nobody, so nothing matches).
    public func matches(_ signal: DBusSignal, owner: (String) -> String? = { _ in nil }) -> Bool {
        if let sender {
            let expected = sender.hasPrefix(":") || sender == DBusMatchRule.busName ? sender : owner(sender)
            guard let expected, signal.sender == expected else { return false }
        }
        guard matchesHeader(of: signal) else { return false }
        if let arg0, signal.arguments.first?.string != arg0 { return false }
        return true
    }

    /// Whether the signal's path, interface and member could match (arguments and sender not checked).
    func matchesHeader(of signal: DBusSignal) -> Bool {
        if let path, signal.path != path { return false }
        if let pathNamespace, !signal.path.isDescendant(of: pathNamespace) { return false }
        if let interface, signal.interface != interface { return false }
        if let member, signal.member != member { return false }
        return true
    }

    /// Whether the rule names a well-known sender other than the bus, whose owner must be followed.
    var followsWellKnownSender: Bool {
        guard let sender else { return false }
        return !sender.hasPrefix(":") && sender != Self.busName
    }

    /// The bus's own name: the sender of every signal the bus itself emits.
    static let busName = "org.freedesktop.DBus"
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
