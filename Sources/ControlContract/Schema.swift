import JSON

/// A JSON Schema in OpenAPI 3.0's dialect, written next to the contract type it describes.
///
/// The OpenAPI document (``ControlContract/document``) is built from these; tests check that each type's
/// encoded examples validate against its schema (every declared property present, no other), so the Swift
/// type and its schema cannot drift apart.
public indirect enum Schema: Sendable, Equatable {
    /// Another component by name (`#/components/schemas/NAME`).
    case ref(String)
    case string(StringRules)
    case integer(minimum: Int64? = nil, maximum: UInt64? = nil)
    case number(minimum: Double? = nil, maximum: Double? = nil)
    case boolean
    /// `true` only (a flag such as `"drop": true`).
    case trueFlag
    case array(Schema, maxItems: Int? = nil)
    /// An object with these properties and no others.
    case object([Property])
    /// An object mapping any name to values of one schema.
    case map(Schema)
    /// An object with these properties whose other members must match `additional`.
    case objectWithExtras([Property], additional: Schema)
    /// Exactly one of these (they must be mutually exclusive).
    case oneOf([Schema])
    /// The schema or `null`.
    case nullable(Schema)
    /// Any JSON object (the OpenAPI document itself).
    case anyObject
    /// A schema with a description.
    case described(String, Schema)

    public static var string: Schema { .string(StringRules()) }

    public static func string(
        pattern: String? = nil, format: String? = nil, enumeration: [String]? = nil,
        minLength: Int? = nil, maxLength: Int? = nil
    ) -> Schema {
        .string(StringRules(pattern: pattern, format: format, enumeration: enumeration, minLength: minLength, maxLength: maxLength))
    }

    /// A schema that requires exactly the members of `properties` that are `required`.
    public struct Property: Sendable, Equatable {
        public var name: String
        public var schema: Schema
        public var required: Bool

        public init(_ name: String, _ schema: Schema, required: Bool = true) {
            self.name = name
            self.schema = schema
            self.required = required
        }
    }

    public struct StringRules: Sendable, Equatable {
        public var pattern: String?
        public var format: String?
        public var enumeration: [String]?
        public var minLength: Int?
        public var maxLength: Int?

        public init(
            pattern: String? = nil, format: String? = nil, enumeration: [String]? = nil, minLength: Int? = nil, maxLength: Int? = nil
        ) {
            self.pattern = pattern
            self.format = format
            self.enumeration = enumeration
            self.minLength = minLength
            self.maxLength = maxLength
        }
    }
}

/// A required property.
public func required(_ name: String, _ schema: Schema) -> Schema.Property { .init(name, schema) }
/// An optional property (absent when the Swift value is nil).
public func optional(_ name: String, _ schema: Schema) -> Schema.Property { .init(name, schema, required: false) }

extension Schema {
    /// The schema as an OpenAPI 3.0 JSON value.
    public var document: JSONNode {
        switch self {
        case .ref(let name):
            return .object([("$ref", .string("#/components/schemas/\(name)"))])
        case .string(let rules):
            var members: [(String, JSONNode)] = [("type", .string("string"))]
            if let format = rules.format { members.append(("format", .string(format))) }
            if let pattern = rules.pattern { members.append(("pattern", .string(pattern))) }
            if let values = rules.enumeration { members.append(("enum", .array(values.map(JSONNode.string)))) }
            if let minLength = rules.minLength { members.append(("minLength", .int(minLength))) }
            if let maxLength = rules.maxLength { members.append(("maxLength", .int(maxLength))) }
            return .object(members)
        case .integer(let minimum, let maximum):
            var members: [(String, JSONNode)] = [("type", .string("integer"))]
            if let minimum { members.append(("minimum", .int(minimum))) }
            if let maximum { members.append(("maximum", .int(maximum))) }
            return .object(members)
        case .number(let minimum, let maximum):
            var members: [(String, JSONNode)] = [("type", .string("number"))]
            if let minimum { members.append(("minimum", .number(minimum))) }
            if let maximum { members.append(("maximum", .number(maximum))) }
            return .object(members)
        case .boolean:
            return .object([("type", .string("boolean"))])
        case .trueFlag:
            return .object([("type", .string("boolean")), ("enum", .array([.bool(true)]))])
        case .array(let items, let maxItems):
            var members: [(String, JSONNode)] = [("type", .string("array")), ("items", items.document)]
            if let maxItems { members.append(("maxItems", .int(maxItems))) }
            return .object(members)
        case .object(let properties):
            return Self.objectDocument(properties, additional: .bool(false))
        case .objectWithExtras(let properties, let additional):
            return Self.objectDocument(properties, additional: additional.document)
        case .map(let values):
            return .object([("type", .string("object")), ("additionalProperties", values.document)])
        case .oneOf(let schemas):
            return .object([("oneOf", .array(schemas.map(\.document)))])
        case .nullable(let schema):
            var document = schema.document
            if case .object(var members) = document.value, members.first?.key == "type" {
                members.append(JSONMember(key: "nullable", value: .bool(true)))
                document.value = .object(members)
                return document
            }
            return .object([("nullable", .bool(true)), ("allOf", .array([schema.document]))])
        case .anyObject:
            return .object([("type", .string("object"))])
        case .described(let text, let schema):
            // A `$ref` ignores siblings in OpenAPI 3.0: wrap it.
            if case .ref = schema { return .object([("description", .string(text)), ("allOf", .array([schema.document]))]) }
            var document = schema.document
            guard case .object(var members) = document.value else { return document }
            members.append(JSONMember(key: "description", value: .string(text)))
            document.value = .object(members)
            return document
        }
    }

    private static func objectDocument(_ properties: [Property], additional: JSONNode) -> JSONNode {
        var members: [(String, JSONNode)] = [("type", .string("object"))]
        let required = properties.filter(\.required).map(\.name)
        if !required.isEmpty { members.append(("required", .array(required.map(JSONNode.string)))) }
        members.append(("properties", .object(properties.map { ($0.name, $0.schema.document) })))
        members.append(("additionalProperties", additional))
        return .object(members)
    }
}
