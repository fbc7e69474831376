/// A JSON value whose every node remembers where it came from: the one JSON tree of gattemu.
///
/// Parsed (``JSONParser``), each node is located in its file; built by code (``JSONNode/object(_:)`` and the
/// other constructors), each is ``SourceLocation/generated``. Objects keep their members in order, including
/// duplicate keys (validation reports those).
public struct JSONNode: Sendable, Equatable {
    public var value: JSONValue
    public var location: SourceLocation

    public init(_ value: JSONValue, at location: SourceLocation) {
        self.value = value
        self.location = location
    }
}

/// One `"key": value` pair of a JSON object.
public struct JSONMember: Sendable, Equatable {
    public var key: String
    public var keyLocation: SourceLocation
    public var value: JSONNode

    /// A member; one a program writes has its key nowhere in a file (``SourceLocation/generated``).
    public init(key: String, keyLocation: SourceLocation = .generated, value: JSONNode) {
        self.key = key
        self.keyLocation = keyLocation
        self.value = value
    }
}

/// The kinds of JSON value. Numbers keep their source text so that huge values are not lost.
///
/// Not `indirect` (arrays already hold nested values): a multi-payload enum of boxes keeps its case in the
/// boxes' pointer bits, where LeakSanitizer cannot see them, so every long-lived tree was reported as leaked.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONNode])
    case object([JSONMember])

    /// A short name of the kind, for messages ("a string", "an object").
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// A JSON number as written, with its integer value when it is an integer that fits in `Int`.
public struct JSONNumber: Sendable, Equatable {
    public var text: String
    public var double: Double

    public init(text: String) {
        self.text = text
        self.double = Double(text) ?? .nan
    }

    /// An integer written in decimal.
    public init(_ integer: some BinaryInteger) {
        self.text = String(integer)
        self.double = Double(integer)
    }

    /// The value as an `Int` when it is integral and in range; nil otherwise.
    public var int: Int? {
        if let exact = Int(text) { return exact }
        guard double.isFinite, double.rounded() == double,
            double >= -9.2e18, double <= 9.2e18
        else { return nil }
        return Int(double)
    }
}

extension JSONNode {
    /// The member named `key` (the last one if duplicated), when this node is an object.
    public subscript(key: String) -> JSONNode? {
        guard case .object(let members) = value else { return nil }
        return members.last(where: { $0.key == key })?.value
    }

    public var stringValue: String? {
        if case .string(let s) = value { return s }
        return nil
    }

    public var intValue: Int? {
        if case .number(let n) = value { return n.int }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let b) = value { return b }
        return nil
    }

    public var doubleValue: Double? {
        if case .number(let n) = value { return n.double }
        return nil
    }

    /// The items, when this node is an array.
    public var arrayItems: [JSONNode]? {
        if case .array(let items) = value { return items }
        return nil
    }

    /// A plain Swift rendering without locations, for equality checks in matchers.
    public var plain: PlainJSON {
        switch value {
        case .null: .null
        case .bool(let b): .bool(b)
        case .number(let n): .number(n.double)
        case .string(let s): .string(s)
        case .array(let items): .array(items.map(\.plain))
        case .object(let members):
            .object(Dictionary(members.map { ($0.key, $0.value.plain) }, uniquingKeysWith: { _, last in last }))
        }
    }
}

/// JSON without source locations; objects compare as unordered dictionaries.
public enum PlainJSON: Sendable, Equatable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([PlainJSON])
    case object([String: PlainJSON])
}
