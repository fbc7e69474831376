import Profile
import Replica

extension JSONNode {
    /// A replica's profile document as the profile decoder reads it, without writing it out as text and parsing it
    /// back (the relay's mirror is made at run time). Every node is located at the start of `file`: a diagnostic
    /// about the document says its JSON path.
    init(document: OrderedJSON, file: String) {
        let here = SourceLocation(file: file, line: 1, column: 1)
        let value: JSONValue =
            switch document {
            case .null: .null
            case .bool(let bool): .bool(bool)
            case .int(let int): .number(JSONNumber(text: String(int)))
            case .string(let string): .string(string)
            case .array(let items): .array(items.map { JSONNode(document: $0, file: file) })
            case .object(let members):
                .object(members.map { JSONMember(key: $0.0, keyLocation: here, value: JSONNode(document: $0.1, file: file)) })
            }
        self.init(value, at: here)
    }
}
