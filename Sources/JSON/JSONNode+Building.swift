/// Documents a program writes (replica profiles, the OpenAPI document): nodes built in code, every one at
/// ``SourceLocation/generated``, in the order given.
extension JSONNode {
    /// `null`.
    public static let null = JSONNode(.null, at: .generated)

    /// `true` or `false`.
    public static func bool(_ value: Bool) -> JSONNode { JSONNode(.bool(value), at: .generated) }

    /// An integer, in decimal.
    public static func int(_ value: some BinaryInteger) -> JSONNode { JSONNode(.number(JSONNumber(value)), at: .generated) }

    /// A number: integral values below 10^15 in magnitude as integers (`5`, not `5.0`), others as Swift writes
    /// a `Double` (`0.5`, `1e+15`).
    public static func number(_ value: Double) -> JSONNode {
        let text = value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        return JSONNode(.number(JSONNumber(text: text)), at: .generated)
    }

    /// A string.
    public static func string(_ value: String) -> JSONNode { JSONNode(.string(value), at: .generated) }

    /// An array of `items`.
    public static func array(_ items: [JSONNode]) -> JSONNode { JSONNode(.array(items), at: .generated) }

    /// An object with `members` in this order (keys are not checked for duplicates).
    public static func object(_ members: [(String, JSONNode)]) -> JSONNode {
        JSONNode(.object(members.map { JSONMember(key: $0.0, value: $0.1) }), at: .generated)
    }

    /// This tree with every node and key located at the start of `file` (line 1, column 1): a generated document
    /// read as if it were that file's, so that a diagnostic about it names the file and its JSON path (the relay's
    /// mirror is loaded so, without writing its profile as text and parsing it back).
    public func located(at file: String) -> JSONNode {
        let start = SourceLocation(file: file, line: 1, column: 1)
        return located(at: start)
    }

    private func located(at start: SourceLocation) -> JSONNode {
        let value: JSONValue =
            switch value {
            case .null, .bool, .number, .string: value
            case .array(let items): .array(items.map { $0.located(at: start) })
            case .object(let members):
                .object(members.map { JSONMember(key: $0.key, keyLocation: start, value: $0.value.located(at: start)) })
            }
        return JSONNode(value, at: start)
    }
}
