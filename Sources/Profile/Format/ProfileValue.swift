/// A variable or state value: a number, text, bytes or a boolean.
public enum ProfileValue: Sendable, Hashable, CustomStringConvertible {
    case number(Int)
    case string(String)
    case bytes([UInt8])
    case bool(Bool)

    /// The kind, for type checks and messages.
    public enum Kind: String, Sendable, Hashable {
        case number, string, bytes, bool
    }

    public var kind: Kind {
        switch self {
        case .number: .number
        case .string: .string
        case .bytes: .bytes
        case .bool: .bool
        }
    }

    /// For status output: numbers in decimal, strings quoted, bytes in hex.
    public var description: String {
        switch self {
        case .number(let n): String(n)
        case .string(let s): "\"\(s)\""
        case .bytes(let b): "hex:" + b.hexString()
        case .bool(let b): String(b)
        }
    }
}
