import Bluetooth
import FaultCatalog
import JSON

/// A fault kind's value grammar (``FaultCatalog``) applied to JSON: what the profile's fault decoder accepts.
extension FaultParameter {
    /// Whether `node` is a value of this grammar.
    func accepts(_ node: JSONNode) -> Bool { problem(node) == nil }

    /// What is wrong with `node` as a value of this grammar ("expected …", "at: expected …"), or nil.
    func problem(_ node: JSONNode) -> String? {
        let fits: Bool
        switch self {
        case .flag: fits = node.boolValue == true
        case .integer(let range): fits = node.intValue.map(range.contains) ?? false
        case .duration: fits = FaultSpecDecoder.milliseconds(node) != nil
        case .attError: fits = FaultSpecDecoder.attError(node) != nil
        case .hexBytes: fits = FaultSpecDecoder.hexBytes(node) != nil
        case .value(let nonEmpty): fits = FaultSpecDecoder.valueBytes(node).map { !nonEmpty || !$0.isEmpty } ?? false
        case .boolean: fits = node.boolValue != nil
        case .name(let names): fits = node.stringValue.map(names.contains) ?? false
        case .variant:
            if case .null = node.value { return nil }
            fits = node.stringValue.map { !$0.isEmpty } ?? false
        case .object(let fields):
            guard case .object(let members) = node.value else { return "expected " + expectation }
            guard Self.keys(members, fit: fields) else { return "expected \(expectation), found keys " + Self.names(members) }
            for field in fields {
                if let value = node[field.name], let problem = field.parameter.problem(value) { return "\(field.name): \(problem)" }
            }
            return nil
        case .oneOf(let forms):
            let fitting = forms.filter { $0.problem(node) == nil }
            if fitting.count == 1 { return nil }
            guard fitting.isEmpty, case .object(let members) = node.value else { return "expected " + expectation }
            // The object form with exactly these keys says what is wrong inside it.
            for case .object(let fields) in forms where Self.keys(members, fit: fields) {
                return FaultParameter.object(fields).problem(node)
            }
            return "expected \(expectation), found keys " + Self.names(members)
        }
        return fits ? nil : "expected " + expectation
    }

    /// Whether `members` are keys of `fields`, with every required one.
    private static func keys(_ members: [JSONMember], fit fields: [FaultField]) -> Bool {
        members.allSatisfy { member in fields.contains { $0.name == member.key } }
            && fields.allSatisfy { field in !field.required || members.contains { $0.key == field.name } }
    }

    private static func names(_ members: [JSONMember]) -> String {
        members.isEmpty ? "none" : members.map(\.key).joined(separator: ", ")
    }

    /// What a value of this grammar looks like, for error messages ("expected …"): ``FaultParameter/text``,
    /// with the names of the ATT errors.
    var expectation: String {
        switch self {
        case .attError:
            "an ATT error: " + ATTError.namesInProfiles.keys.sorted().joined(separator: ", ") + ", or an application code 0x80–0x9F"
        default: text
        }
    }
}
