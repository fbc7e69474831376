import Lexical

/// A characteristic value in a request: exactly one of hex, UTF-8 text or base64.
public enum ValueBody: ContractType, Equatable {
    case hex(String)
    case utf8(String)
    case base64(String)

    public static let schemaName = "Value"
    public static var schema: Schema {
        .oneOf([
            .object([
                required(
                    "hex",
                    .described(
                        "hex bytes, optionally after 0x; spaces, tabs, ':' and '-' allowed between digits",
                        .string(pattern: Patterns.hex, maxLength: ValueForm.hex.textLimit)))
            ]),
            .object([required("utf8", .string(maxLength: ValueForm.utf8.textLimit))]),
            .object([required("base64", .string(pattern: Patterns.base64, format: "byte", maxLength: ValueForm.base64.textLimit))]),
        ])
    }
    public static var examples: [ValueBody] { [.hex("51 60 0a"), .utf8("hi"), .base64("UWA=")] }

    enum Key: String, CodingKey { case hex, utf8, base64 }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        guard container.allKeys.count == 1, let key = container.allKeys.first else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "give exactly one of hex, utf8, base64"))
        }
        let text = try container.decode(String.self, forKey: key)
        switch key {
        case .hex: self = .hex(text)
        case .utf8: self = .utf8(text)
        case .base64: self = .base64(text)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        switch self {
        case .hex(let text): try container.encode(text, forKey: .hex)
        case .utf8(let text): try container.encode(text, forKey: .utf8)
        case .base64(let text): try container.encode(text, forKey: .base64)
        }
    }

    /// The bytes; nil when the text is not valid for its form.
    public var bytes: [UInt8]? {
        switch self {
        case .hex(let text): ValueForm.hex.bytes(text)
        case .utf8(let text): ValueForm.utf8.bytes(text)
        case .base64(let text): ValueForm.base64.bytes(text)
        }
    }
}

/// Answer to notify, indicate and set-value: the bytes as hex.
public struct ValueResult: ContractType, Equatable {
    public var ok: Bool
    public var characteristic: String
    public var hex: String

    public init(characteristic: String, hex: String) {
        self.ok = true
        self.characteristic = characteristic
        self.hex = hex
    }

    public static let schemaName = "ValueResult"
    public static var schema: Schema {
        .object([required("ok", .trueFlag), required("characteristic", .string), required("hex", .string(pattern: "^([0-9a-f]{2})*$"))])
    }
    public static var examples: [ValueResult] { [ValueResult(characteristic: "tx", hex: "5160")] }
}
