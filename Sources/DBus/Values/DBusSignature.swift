/// A D-Bus type signature such as `a{sv}`; the caller is trusted to pass a valid one.
public struct DBusSignature: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String

    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    public var description: String { rawValue }

    public static let byte: DBusSignature = "y"
    public static let boolean: DBusSignature = "b"
    public static let int16: DBusSignature = "n"
    public static let uint16: DBusSignature = "q"
    public static let int32: DBusSignature = "i"
    public static let uint32: DBusSignature = "u"
    public static let int64: DBusSignature = "x"
    public static let uint64: DBusSignature = "t"
    public static let double: DBusSignature = "d"
    public static let string: DBusSignature = "s"
    public static let objectPath: DBusSignature = "o"
    public static let signature: DBusSignature = "g"
    public static let unixFD: DBusSignature = "h"
    public static let variant: DBusSignature = "v"
    public static let bytes: DBusSignature = "ay"
    public static let stringVariantDictionary: DBusSignature = "a{sv}"

    /// The signature of an array of `element`.
    public static func array(of element: DBusSignature) -> DBusSignature {
        DBusSignature("a" + element.rawValue)
    }

    /// The signature of a dictionary `a{key value}`.
    public static func dictionary(key: DBusSignature, value: DBusSignature) -> DBusSignature {
        DBusSignature("a{" + key.rawValue + value.rawValue + "}")
    }

    /// Whether libdbus accepts this as a signature of zero or more complete types.
    public var isValid: Bool {
        rawValue.withCString { dbusSignatureValidate($0) }
    }
}
