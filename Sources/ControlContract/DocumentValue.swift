import TextEscaping

/// A JSON value with object members in a fixed order, printed the same way every time (two-space
/// indentation), so that the committed `openapi.json` is exactly what the types produce.
public indirect enum DocumentValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case unsigned(UInt64)
    case number(Double)
    case string(String)
    case array([DocumentValue])
    case object([(String, DocumentValue)])

    public static func == (lhs: DocumentValue, rhs: DocumentValue) -> Bool { lhs.text == rhs.text }

    /// Pretty-printed JSON text, without a final newline.
    public var text: String {
        var output = ""
        write(to: &output, indent: 0)
        return output
    }

    func write(to output: inout String, indent: Int) {
        switch self {
        case .null: output += "null"
        case .bool(let value): output += value ? "true" : "false"
        case .integer(let value): output += String(value)
        case .unsigned(let value): output += String(value)
        case .number(let value):
            if value.rounded() == value, abs(value) < 1e15 { output += String(Int64(value)) } else { output += String(value) }
        case .string(let value): output += JSONText.quoted(value)
        case .array(let items):
            guard !items.isEmpty else {
                output += "[]"
                return
            }
            output += "[\n"
            for (index, item) in items.enumerated() {
                output += String(repeating: " ", count: indent + 2)
                item.write(to: &output, indent: indent + 2)
                output += index == items.count - 1 ? "\n" : ",\n"
            }
            output += String(repeating: " ", count: indent) + "]"
        case .object(let members):
            guard !members.isEmpty else {
                output += "{}"
                return
            }
            output += "{\n"
            for (index, member) in members.enumerated() {
                output += String(repeating: " ", count: indent + 2) + JSONText.quoted(member.0) + ": "
                member.1.write(to: &output, indent: indent + 2)
                output += index == members.count - 1 ? "\n" : ",\n"
            }
            output += String(repeating: " ", count: indent) + "}"
        }
    }
}
