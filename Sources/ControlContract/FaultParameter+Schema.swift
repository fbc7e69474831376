import FaultCatalog

extension FaultParameter {
    /// The JSON Schema of a fault kind's value (``FaultCatalog``), as `FaultSpec` in the OpenAPI document shows it.
    var schema: Schema {
        switch self {
        case .flag: .trueFlag
        case .integer(let range): .integer(minimum: Int64(range.lowerBound), maximum: UInt64(range.upperBound))
        case .duration: DurationValue.schema
        case .attError:
            .oneOf([
                .string(enumeration: ATTErrorValue.names),
                .string(pattern: Patterns.applicationError),
                .integer(minimum: 0x80, maximum: 0x9F),
            ])
        case .hexBytes: .string(pattern: Self.hexPattern, maxLength: FaultCatalog.maximumHexCharacters)
        case .variant: .described("a variant name, or null for the base advertisement", .nullable(.string(minLength: 1)))
        case .object(let fields): .object(fields.map { Schema.Property($0.name, $0.parameter.schema, required: $0.required) })
        case .oneOf(let forms): .oneOf(forms.map(\.schema))
        }
    }

    /// At least one hex byte in the profile's hex grammar: an optional `0x`, then pairs of hex digits with
    /// spaces, tabs, `:` and `-` anywhere between them.
    static let hexPattern = #"^(0[xX])?[ :\t-]*([0-9A-Fa-f][ :\t-]*[0-9A-Fa-f][ :\t-]*)+$"#
}
