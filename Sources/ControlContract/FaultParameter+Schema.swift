import FaultCatalog
import Lexical

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
        case .hexBytes: .string(pattern: Patterns.nonEmptyHex, maxLength: FaultCatalog.maximumHexCharacters)
        case .value(let nonEmpty):
            .described(
                "hex text as in a profile, or one of hex, utf8, base64; at most \(FaultCatalog.maximumValueBytes) bytes"
                    + (nonEmpty ? ", at least one" : ""),
                .oneOf([
                    .string(pattern: nonEmpty ? Patterns.nonEmptyHex : Patterns.hex, maxLength: ValueForm.hex.textLimit),
                    .object([
                        required(
                            "hex", .string(pattern: nonEmpty ? Patterns.nonEmptyHex : Patterns.hex, maxLength: ValueForm.hex.textLimit))
                    ]),
                    .object([required("utf8", .string(minLength: nonEmpty ? 1 : nil, maxLength: ValueForm.utf8.textLimit))]),
                    .object([
                        required(
                            "base64",
                            .string(pattern: nonEmpty ? Patterns.nonEmptyBase64 : Patterns.base64, maxLength: ValueForm.base64.textLimit))
                    ]),
                ]))
        case .boolean: .boolean
        case .name(let names): .string(enumeration: names)
        case .variant: .described("a variant name, or null for the base advertisement", .nullable(.string(minLength: 1)))
        case .object(let fields): .object(fields.map { Schema.Property($0.name, $0.parameter.schema, required: $0.required) })
        case .oneOf(let forms): .oneOf(forms.map(\.schema))
        }
    }

}
