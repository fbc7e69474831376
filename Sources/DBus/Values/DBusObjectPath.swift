/// A D-Bus object path such as `/org/bluez/hci0`.
public struct DBusObjectPath: Hashable, Sendable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String

    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    public var description: String { rawValue }

    public static let root: DBusObjectPath = "/"

    /// This path with `component` appended (`/a` + `b` → `/a/b`).
    public func appending(_ component: String) -> DBusObjectPath {
        rawValue == "/" ? DBusObjectPath("/" + component) : DBusObjectPath(rawValue + "/" + component)
    }

    /// Whether this path equals `ancestor` or lies below it.
    public func isDescendant(of ancestor: DBusObjectPath) -> Bool {
        if ancestor.rawValue == "/" || ancestor == self { return true }
        return rawValue.hasPrefix(ancestor.rawValue + "/")
    }

    /// Whether the string is a syntactically valid object path.
    public var isValid: Bool {
        rawValue.withCString { dbusObjectPathValidate($0) }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
