import Lexical

/// A trigger argument: text, a number or a boolean (numbers and booleans reach the profile as text).
public enum ArgumentValue: Codable, Sendable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)

    public static var schema: Schema { .oneOf([.string, .number(), .boolean]) }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        }
    }
}

/// `POST /v1/triggers/{name}` (optional): `{"arguments": {...}}`; a flat object of arguments works too.
public struct TriggerBody: ContractType, Equatable {
    public var arguments: [String: ArgumentValue]?

    public init(arguments: [String: ArgumentValue]) { self.arguments = arguments }

    public static let schemaName = "TriggerArguments"
    public static var schema: Schema {
        .described(
            "{\"arguments\": {name: value}}, or the arguments as a flat object",
            .objectWithExtras([optional("arguments", .map(ArgumentValue.schema))], additional: ArgumentValue.schema))
    }
    public static var examples: [TriggerBody] {
        [TriggerBody(arguments: ["reason": .string("test"), "n": .number(2), "hard": .bool(true)])]
    }
}

/// `PUT /v1/advertisement`: a variant name, or null for the base advertisement.
public struct VariantBody: ContractType, Equatable {
    public var variant: String?

    public init(variant: String?) { self.variant = variant }

    public static let schemaName = "VariantRequest"
    public static var schema: Schema { .object([required("variant", .nullable(.string(minLength: 1)))]) }
    public static var examples: [VariantBody] { [VariantBody(variant: "touched"), VariantBody(variant: nil)] }

    enum Key: String, CodingKey { case variant }

    public init(from decoder: any Decoder) throws {
        variant = try decoder.container(keyedBy: Key.self).decode(String?.self, forKey: .variant)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(variant, forKey: .variant)  // null, not absent, for the base
    }
}

/// A named value set through `PUT /v1/variables/{name}`: text, a whole number, a boolean, or bytes.
public enum NamedValueBody: Codable, Sendable, Equatable {
    case string(String)
    case integer(Int)
    case bool(Bool)
    case hex(String)

    public static var schema: Schema {
        .oneOf([
            .string(maxLength: ValueForm.utf8.textLimit),
            .integer(minimum: Int64.min, maximum: UInt64(Int64.max)),
            .boolean,
            .object([required("hex", .string(pattern: Patterns.hex, maxLength: ValueForm.hex.textLimit))]),
        ])
    }

    enum Key: String, CodingKey { case hex }

    public init(from decoder: any Decoder) throws {
        if let object = try? decoder.container(keyedBy: Key.self) {
            self = .hex(try object.decode(String.self, forKey: .hex))
            return
        }
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .integer(value)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .hex(let text):
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(text, forKey: .hex)
        case .string(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .integer(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .bool(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        }
    }
}

/// `PUT /v1/variables/{name}`: the new value of a variable or state value of the profile.
public struct VariableBody: ContractType, Equatable {
    public var value: NamedValueBody

    public init(value: NamedValueBody) { self.value = value }

    public static let schemaName = "VariableRequest"
    public static var schema: Schema {
        .object([
            required(
                "value",
                .described(
                    "Of the value's type in the profile (409 otherwise): a string, a whole number, a boolean, or {\"hex\": …} for bytes",
                    NamedValueBody.schema))
        ])
    }
    public static var examples: [VariableBody] {
        [
            VariableBody(value: .integer(0)), VariableBody(value: .string("3E")), VariableBody(value: .bool(true)),
            VariableBody(value: .hex("01 02")),
        ]
    }
}
