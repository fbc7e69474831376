import Bluetooth

/// A JSON value whose object members keep the order they were given, printed the way people write profiles.
public indirect enum OrderedJSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int)
    case string(String)
    case array([OrderedJSON])
    case object([(String, OrderedJSON)])

    public static func == (lhs: OrderedJSON, rhs: OrderedJSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.int(let a), .int(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// `{"hex": "…"}`: bytes as profiles write them.
    public static func hex(_ bytes: [UInt8]) -> OrderedJSON {
        .object([("hex", .string(Hex.string(bytes)))])
    }

    /// Pretty-printed with two-space indentation; short arrays of scalars stay on one line.
    public func text(indent: Int = 0) -> String {
        let pad = String(repeating: "  ", count: indent)
        let inner = String(repeating: "  ", count: indent + 1)
        switch self {
        case .null: return "null"
        case .bool(let value): return value ? "true" : "false"
        case .int(let value): return String(value)
        case .string(let value): return Self.quoted(value)
        case .array(let items):
            if items.isEmpty { return "[]" }
            let flat = items.allSatisfy(\.isScalar) ? "[" + items.map { $0.text() }.joined(separator: ", ") + "]" : nil
            if let flat, flat.count + indent * 2 <= 100 { return flat }
            return "[\n" + items.map { inner + $0.text(indent: indent + 1) }.joined(separator: ",\n") + "\n" + pad + "]"
        case .object(let members):
            if members.isEmpty { return "{}" }
            let flat = "{ " + members.map { Self.quoted($0.0) + ": " + $0.1.text() }.joined(separator: ", ") + " }"
            if members.allSatisfy({ $0.1.isScalar || $0.1.isSmallObject }), flat.count + indent * 2 <= 100, !flat.contains("\n") {
                return flat
            }
            return "{\n" + members.map { inner + Self.quoted($0.0) + ": " + $0.1.text(indent: indent + 1) }.joined(separator: ",\n")
                + "\n" + pad + "}"
        }
    }

    private var isScalar: Bool {
        switch self {
        case .array, .object: false
        default: true
        }
    }

    private var isSmallObject: Bool {
        if case .object(let members) = self { return members.count <= 2 && members.allSatisfy(\.1.isScalar) }
        return false
    }

    /// A JSON string literal; control characters and non-ASCII as escapes, so the file is plain ASCII.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F || scalar.value > 0x7E {
                    if scalar.value > 0xFFFF {
                        let value = scalar.value - 0x10000
                        out += Self.escape(0xD800 + (value >> 10)) + Self.escape(0xDC00 + (value & 0x3FF))
                    } else {
                        out += Self.escape(scalar.value)
                    }
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    private static func escape(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
    }
}
