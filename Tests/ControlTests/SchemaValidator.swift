import ControlContract
import Foundation
import Profile

/// A small JSON Schema checker for the contract's own schemas (the subset ``Schema`` can express), used to
/// check that what the Swift types encode is what the document says.
struct SchemaValidator {
    /// Property names each object schema (by its position: a path of names) saw in the instances checked.
    var seen: [String: Set<String>] = [:]
    var declared: [String: Set<String>] = [:]
    /// Inside a oneOf, properties are not counted (each branch declares its own).
    var oneOfDepth = 0

    /// Problems with `value` against `schema`, as "path: message".
    mutating func problems(_ node: JSONNode, _ schema: Schema, path: String = "$") -> [String] {
        let value = node.value
        switch schema {
        case .ref(let name):
            guard let type = ControlContract.types.first(where: { $0.schemaName == name }) else { return ["\(path): unknown $ref \(name)"] }
            return problems(node, type.schema, path: path)
        case .described(_, let inner):
            return problems(node, inner, path: path)
        case .nullable(let inner):
            if case .null = value { return [] }
            return problems(node, inner, path: path)
        case .anyObject:
            if case .object = value { return [] }
            return ["\(path): expected an object"]
        case .boolean:
            if case .bool = value { return [] }
            return ["\(path): expected a boolean"]
        case .trueFlag:
            if case .bool(true) = value { return [] }
            return ["\(path): expected true"]
        case .integer(let minimum, let maximum):
            guard case .number(let number) = value, number.double.rounded() == number.double else {
                return ["\(path): expected an integer"]
            }
            if let minimum, number.double < Double(minimum) { return ["\(path): below \(minimum)"] }
            if let maximum, number.double > Double(maximum) { return ["\(path): above \(maximum)"] }
            return []
        case .number(let minimum, let maximum):
            guard case .number(let number) = value else { return ["\(path): expected a number"] }
            if let minimum, number.double < minimum { return ["\(path): below \(minimum)"] }
            if let maximum, number.double > maximum { return ["\(path): above \(maximum)"] }
            return []
        case .string(let rules):
            guard case .string(let text) = value else { return ["\(path): expected a string"] }
            if let values = rules.enumeration, !values.contains(text) { return ["\(path): \"\(text)\" not in \(values)"] }
            if let pattern = rules.pattern, text.range(of: pattern, options: .regularExpression) == nil {
                return ["\(path): \"\(text)\" does not match \(pattern)"]
            }
            if let maxLength = rules.maxLength, text.unicodeScalars.count > maxLength { return ["\(path): longer than \(maxLength)"] }
            if let minLength = rules.minLength, text.unicodeScalars.count < minLength { return ["\(path): shorter than \(minLength)"] }
            return []
        case .array(let items, let maxItems):
            guard case .array(let array) = value else { return ["\(path): expected an array"] }
            if let maxItems, array.count > maxItems { return ["\(path): more than \(maxItems) items"] }
            var found: [String] = []
            for (index, element) in array.enumerated() { found += problems(element, items, path: "\(path)[\(index)]") }
            return found
        case .map(let values):
            guard case .object(let members) = value else { return ["\(path): expected an object"] }
            var found: [String] = []
            for member in members { found += problems(member.value, values, path: "\(path).\(member.key)") }
            return found
        case .object(let properties), .objectWithExtras(let properties, _):
            guard case .object(let members) = value else { return ["\(path): expected an object"] }
            let object = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last })
            var found: [String] = []
            let names = Set(properties.map(\.name))
            if oneOfDepth == 0 {
                // The items of an array together: an example list of several kinds of one thing (a fault on a
                // characteristic, one on a channel) uses every property between them.
                let place = path.replacing(#/\[[0-9]+\]/#, with: "[]")
                declared[place, default: []].formUnion(names)
                seen[place, default: []].formUnion(object.keys.filter(names.contains))
            }
            for property in properties {
                if let member = object[property.name] {
                    found += problems(member, property.schema, path: "\(path).\(property.name)")
                } else if property.required {
                    found.append("\(path): missing required \"\(property.name)\"")
                }
            }
            for (key, member) in object where !names.contains(key) {
                if case .objectWithExtras(_, let additional) = schema {
                    found += problems(member, additional, path: "\(path).\(key)")
                } else {
                    found.append("\(path): \"\(key)\" is not in the schema")
                }
            }
            return found
        case .oneOf(let branches):
            oneOfDepth += 1
            defer { oneOfDepth -= 1 }
            var scratch = self
            let matching = branches.filter { scratch.problems(node, $0, path: path).isEmpty }.count
            if matching == 1 {
                for branch in branches {
                    var probe = self
                    if probe.problems(node, branch, path: path).isEmpty {
                        self = probe
                        break
                    }
                }
                return []
            }
            return ["\(path): matches \(matching) of the \(branches.count) oneOf branches"]
        }
    }
}
