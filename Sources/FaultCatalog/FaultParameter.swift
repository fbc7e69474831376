/// The grammar of a fault kind's value (the JSON value of its action key), with its bounds.
///
/// The profile's fault decoder, the control contract's schema (and so the OpenAPI document and
/// `profiles/schema.json`) and `gattemu ctl` read it from ``FaultCatalog``.
public indirect enum FaultParameter: Sendable, Equatable {
    /// `true`, nothing else.
    case flag
    /// A whole number in this range.
    case integer(ClosedRange<Int>)
    /// A duration: milliseconds (`500`), `"500ms"` or `"1.5s"` (the contract's duration grammar).
    case duration
    /// A named ATT error (`"not-authorized"`) or an application code `"0x80"`…`"0x9F"` (or 128…159).
    case attError
    /// Bytes as hex text, in the profile's hex grammar (`"ff 00"`, `"0x01"`), at most
    /// ``FaultCatalog/maximumHexCharacters`` characters, at least one byte.
    case hexBytes
    /// A byte value in the one value grammar (module Lexical's `ValueForm`): hex text as in a profile (`"51 60"`), or
    /// `{"hex": …}`, `{"utf8": …}` or `{"base64": …}`, each text at most its form's `textLimit`; at most
    /// ``FaultCatalog/maximumValueBytes`` bytes (a longer one is well-formed but refused as a conflict: a JSON Schema
    /// cannot count the bytes of hex with separators or of UTF-8); at least one byte when `nonEmpty`.
    case value(nonEmpty: Bool)
    /// `true` or `false`.
    case boolean
    /// One of these names.
    case name([String])
    /// An advertisement variant's name, or `null` for the base advertisement.
    case variant
    /// An object with exactly these members (the optional ones may be left out).
    case object([FaultField])
    /// Exactly one of these forms.
    case oneOf([FaultParameter])
}

/// A member of an object-valued ``FaultParameter``.
public struct FaultField: Sendable, Equatable {
    public var name: String
    public var parameter: FaultParameter
    public var required: Bool

    public init(_ name: String, _ parameter: FaultParameter, required: Bool = true) {
        self.name = name
        self.parameter = parameter
        self.required = required
    }
}

extension FaultParameter {
    /// What a value of this grammar looks like, in words ("a whole number from 0 to 512"), for messages,
    /// help and the docs' table.
    public var text: String {
        switch self {
        case .flag: "true"
        case .integer(let range): "a whole number from \(range.lowerBound) to \(range.upperBound)"
        case .duration: "a duration (500, \"500ms\" or \"1.5s\")"
        case .attError: "an ATT error name (\"not-authorized\") or an application code \"0x80\"–\"0x9F\" (or 128–159)"
        case .hexBytes: "hex bytes as in a profile (\"ff 00\", \"0x01\"), at most \(FaultCatalog.maximumHexCharacters) characters"
        case .value(let nonEmpty):
            "a value: hex text (\"51 60\") or {\"hex\": …}, {\"utf8\": …} or {\"base64\": …}, "
                + (nonEmpty
                    ? "1 to \(FaultCatalog.maximumValueBytes) bytes" : "at most \(FaultCatalog.maximumValueBytes) bytes (may be empty)")
        case .boolean: "true or false"
        case .name(let names): "one of " + names.map { "\"\($0)\"" }.joined(separator: ", ")
        case .variant: "an advertisement variant's name, or null for the base advertisement"
        case .object(let fields):
            "{"
                + fields.map { "\"\($0.name)\"\($0.required ? "" : " (optional)"): \($0.parameter.text)" }.joined(separator: ", ")
                + "}"
        case .oneOf(let forms): forms.map(\.text).joined(separator: "; or ")
        }
    }
}
