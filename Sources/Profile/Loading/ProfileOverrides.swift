import JSON

/// Applies command-line overrides (`--set path=value`) to a JSON tree.
///
/// Path steps name object keys; on arrays a step selects the item whose `id` equals it, or an index
/// (`services.credential.uuid`, `advertisements.0.localName`, `rules[2].stop`). The value is parsed as
/// JSON when it parses, else taken as a string. Missing object keys are created.
enum ProfileOverrides {
    static func apply(_ overrides: [(path: String, value: String)], to root: JSONNode) -> (JSONNode, [Diagnostic]) {
        var root = root
        var diagnostics: [Diagnostic] = []
        for (path, text) in overrides {
            let file = "--set \(path)"
            let location = SourceLocation(file: file, line: 1, column: 1)
            func fail(_ message: String, hint: String? = nil) {
                diagnostics.append(Diagnostic(at: location, path: path, message: message, hint: hint))
            }
            guard let components = JSONPath.components(of: path) else {
                fail("malformed path \"\(path)\"", hint: "write keys separated by dots, e.g. variables.hardwareCode")
                continue
            }
            let value: JSONNode
            if let parsed = try? JSONParser.parse(text, file: file) {
                value = parsed
            } else {
                value = JSONNode(.string(text), at: location)
            }
            do throws(OverrideError) {
                root = try set(value, at: components[...], in: root, walked: "")
            } catch {
                fail(error.message, hint: error.hint)
            }
        }
        return (root, diagnostics)
    }

    struct OverrideError: Error {
        var message: String
        var hint: String?
    }

    private static func set(
        _ value: JSONNode, at components: ArraySlice<JSONPath.Component>, in node: JSONNode, walked: String
    ) throws(OverrideError) -> JSONNode {
        guard let component = components.first else { return try replace(node, with: value, at: walked) }
        let rest = components.dropFirst()
        switch node.value {
        case .object(var members):
            guard case .key(let key) = component else {
                throw OverrideError(message: "\(describe(walked)) is an object; use a key, not an index")
            }
            let childPath = JSONPath.appending(key, to: walked)
            if let index = members.lastIndex(where: { $0.key == key }) {
                members[index].value = try set(value, at: rest, in: members[index].value, walked: childPath)
            } else {
                let empty = JSONNode(.object([]), at: value.location)
                let child = try set(value, at: rest, in: rest.isEmpty ? value : empty, walked: childPath)
                members.append(JSONMember(key: key, keyLocation: value.location, value: child))
            }
            return JSONNode(.object(members), at: node.location)
        case .array(var items):
            let index: Int
            switch component {
            case .index(let position): index = position
            case .key(let key):
                if let found = items.firstIndex(where: { $0["id"]?.stringValue == key }) {
                    index = found
                } else if let position = Int(key) {
                    index = position
                } else {
                    let ids = items.compactMap { $0["id"]?.stringValue }
                    throw OverrideError(
                        message: "no item with id \"\(key)\" in \(describe(walked))",
                        hint: Suggestions.hint(for: key, in: ids) ?? (ids.isEmpty ? nil : "ids: \(ids.joined(separator: ", "))"))
                }
            }
            let childPath = JSONPath.appending(index, to: walked)
            if index == items.count, rest.isEmpty {
                items.append(value)
            } else if items.indices.contains(index) {
                items[index] = try set(value, at: rest, in: items[index], walked: childPath)
            } else {
                throw OverrideError(message: "index \(index) is out of range: \(describe(walked)) has \(items.count) items")
            }
            return JSONNode(.array(items), at: node.location)
        default:
            throw OverrideError(message: "\(describe(walked)) is \(node.value.kindName), not an object or array")
        }
    }

    /// The new value, made to fit the kind of the value it replaces: text that happens to parse as a
    /// number or boolean stays text where a string was (`hardwareCode=12`), and text that does not parse
    /// cannot replace a number or boolean.
    private static func replace(_ old: JSONNode, with new: JSONNode, at path: String) throws(OverrideError) -> JSONNode {
        switch (old.value, new.value) {
        case (.string, .number(let number)):
            return JSONNode(.string(number.text), at: new.location)
        case (.string, .bool(let flag)):
            return JSONNode(.string(flag ? "true" : "false"), at: new.location)
        case (.number, .string(let text)), (.bool, .string(let text)):
            throw OverrideError(
                message: "\(describe(path)) is \(old.value.kindName), not text like \"\(text)\"",
                hint: old.value.kindName == "a number" ? "give a number, e.g. 3000" : "give true or false")
        default:
            return new
        }
    }

    private static func describe(_ path: String) -> String { path.isEmpty ? "the profile" : path }
}
