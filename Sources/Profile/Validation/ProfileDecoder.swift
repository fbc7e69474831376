import Bluetooth
import JSON
import Lexical

/// Turns a merged JSON tree into a `DeviceProfile`, collecting every problem as a `Diagnostic`.
///
/// Decoding checks shapes, types, keys and local values; `SemanticChecks` then checks references.
struct ProfileDecoder {
    /// A template waiting to be checked once all names are known.
    struct PendingTemplate {
        var template: Template
        var usage: TemplateUsage
        var path: String
        var location: SourceLocation
    }

    var diagnostics: [Diagnostic] = []
    var templates: [PendingTemplate] = []
    /// Templates already parsed in this profile, by source text: profiles repeat them (a burst of identical
    /// notifications), and parsing is most of the cost of loading.
    var parsedTemplates: [String: Template] = [:]
    /// Service UUIDs by service id, so advertisements can name services by id.
    var serviceUUIDsByID: [String: BluetoothUUID] = [:]
    /// The ids of the characteristics decoded so far by UUID, for the hint when a rule names one by UUID.
    var characteristicIDsByUUID: [BluetoothUUID: [String]] = [:]
    /// Service ids by UUID, from the document's `services` before they are decoded (includes name services while
    /// they are), for the hint of ``serviceID(_:_:)``.
    var serviceIDsByUUID: [BluetoothUUID: [String]] = [:]
    let file: String
    /// Bounds the work of "did you mean" hints for the whole profile (shared with ``SemanticChecks``).
    let suggestions = SuggestionBudget()

    init(file: String) {
        self.file = file
    }

    // MARK: Reporting

    mutating func error(_ node: JSONNode, _ path: String, _ message: String, hint: String? = nil) {
        diagnostics.append(Diagnostic(at: node.location, path: path, message: message, hint: hint))
    }

    mutating func error(at location: SourceLocation, _ path: String, _ message: String, hint: String? = nil) {
        diagnostics.append(Diagnostic(at: location, path: path, message: message, hint: hint))
    }

    mutating func typeError(_ node: JSONNode, _ path: String, expected: String) {
        error(node, path, "expected \(expected), found \(node.value.kindName)")
    }

    // MARK: Shapes

    /// The object's members after reporting duplicate and unknown keys (with suggestions).
    /// `$comment` is allowed everywhere.
    mutating func members(_ node: JSONNode, _ path: String, allowed: [String]) -> [JSONMember]? {
        guard case .object(let members) = node.value else {
            typeError(node, path, expected: "an object")
            return nil
        }
        // Objects here have a handful of keys: comparing with the earlier ones beats hashing every key.
        var seen: Set<String>? = members.count > 16 ? [] : nil
        for (position, member) in members.enumerated() {
            let duplicate =
                seen == nil
                ? members[..<position].contains { $0.key == member.key }
                : seen?.insert(member.key).inserted == false
            if duplicate {
                error(at: member.keyLocation, JSONPath.appending(member.key, to: path), "duplicate key \"\(member.key)\"")
            }
            if member.key == "$comment" {
                // Free text for people, in any object; still a string (schema.json says so, and editors show it).
                if case .string = member.value.value {
                } else {
                    typeError(member.value, JSONPath.appending(member.key, to: path), expected: "a string")
                }
                continue
            }
            if !allowed.contains(member.key) {
                error(
                    at: member.keyLocation, JSONPath.appending(member.key, to: path), "unknown key \"\(member.key)\"",
                    hint: Suggestions.hint(for: member.key, in: { allowed }, budget: suggestions))
            }
        }
        return members
    }

    /// An object's `description`, free text for people: a string when present (its value is not kept).
    mutating func documentation(_ node: JSONNode, _ path: String) {
        if let text = node["description"] { _ = string(text, JSONPath.appending("description", to: path)) }
    }

    mutating func required(_ node: JSONNode, _ key: String, _ path: String) -> JSONNode? {
        guard let value = node[key] else {
            error(node, path, "missing \"\(key)\"")
            return nil
        }
        return value
    }

    mutating func string(_ node: JSONNode, _ path: String) -> String? {
        guard case .string(let text) = node.value else {
            typeError(node, path, expected: "a string")
            return nil
        }
        return text
    }

    mutating func bool(_ node: JSONNode, _ path: String) -> Bool? {
        guard case .bool(let value) = node.value else {
            typeError(node, path, expected: "true or false")
            return nil
        }
        return value
    }

    mutating func integer(_ node: JSONNode, _ path: String, in range: ClosedRange<Int>) -> Int? {
        guard case .number(let number) = node.value else {
            typeError(node, path, expected: "a number")
            return nil
        }
        guard let value = number.int else {
            error(node, path, "\(number.text) is not an integer in \(range.lowerBound)...\(range.upperBound)")
            return nil
        }
        guard range.contains(value) else {
            error(node, path, "\(value) is out of range \(range.lowerBound)...\(range.upperBound)")
            return nil
        }
        return value
    }

    /// An integer written as a number or as a string of decimal digits or `0x` and hex digits (nothing else: no sign,
    /// no spaces, as schema.json's patterns say).
    mutating func flexibleInteger(_ node: JSONNode, _ path: String, in range: ClosedRange<Int>) -> Int? {
        if case .string(let text) = node.value {
            let hex = text.hasPrefix("0x") || text.hasPrefix("0X")
            let digits = hex ? text.dropFirst(2) : Substring(text)
            let valid = !digits.isEmpty && digits.allSatisfy { $0.isASCII && (hex ? $0.isHexDigit : $0.isWholeNumber) }
            let parsed = valid ? Int(digits, radix: hex ? 16 : 10) : nil
            guard let value = parsed, range.contains(value) else {
                error(node, path, "\"\(text)\" is not a number in \(range.lowerBound)...\(range.upperBound)")
                return nil
            }
            return value
        }
        return integer(node, path, in: range)
    }

    mutating func array(_ node: JSONNode, _ path: String) -> [JSONNode]? {
        guard case .array(let items) = node.value else {
            typeError(node, path, expected: "an array")
            return nil
        }
        return items
    }

    /// An id or name: a letter or `_`, then letters, digits, `_` or `-`.
    mutating func identifier(_ node: JSONNode, _ path: String) -> String? {
        guard let text = string(node, path) else { return nil }
        guard Self.isIdentifier(text) else {
            error(
                node, path, "\"\(text)\" is not a valid name",
                hint: "use letters, digits, '_' and '-', starting with a letter")
            return nil
        }
        return text
    }

    /// A characteristic's id; one written as a UUID (`"2a4d"`) is refused with the ids that have it.
    mutating func characteristicID(_ node: JSONNode, _ path: String) -> CharacteristicID? {
        reference(node, path, to: "characteristic", idsByUUID: characteristicIDsByUUID).map { CharacteristicID($0) }
    }

    /// A service's id; one written as a UUID (`"180f"`) is refused with the ids that have it.
    mutating func serviceID(_ node: JSONNode, _ path: String) -> String? {
        reference(node, path, to: "service", idsByUUID: serviceIDsByUUID)
    }

    /// The id of a `kind` (`characteristic`, `service`) named elsewhere in the profile: an identifier, and a UUID
    /// that `idsByUUID` knows is refused with the ids that have it.
    private mutating func reference(_ node: JSONNode, _ path: String, to kind: String, idsByUUID: [BluetoothUUID: [String]]) -> String? {
        guard let text = string(node, path) else { return nil }
        if !Self.isIdentifier(text), let hint = DeviceProfile.idHint(forUUID: text, in: idsByUUID, kind: kind + "s") {
            error(node, path, "unknown \(kind) \"\(text)\"", hint: hint)
            return nil
        }
        return identifier(node, path)
    }

    /// The ids of `services` (the document's, not yet decoded) by UUID; entries without both are left out.
    static func serviceIDsByUUID(_ services: [JSONNode]) -> [BluetoothUUID: [String]] {
        var ids: [BluetoothUUID: [String]] = [:]
        for service in services {
            guard let id = service["id"]?.stringValue, isIdentifier(id), let uuid = service["uuid"]?.stringValue.flatMap(BluetoothUUID.init)
            else { continue }
            ids[uuid, default: []].append(id)
        }
        return ids
    }

    /// An ASCII letter or `_`, then ASCII letters, digits, `_` or `-` (checked byte-wise, as in ``JSONPath``).
    static func isIdentifier(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard let first = utf8.first, isASCIILetter(first) || first == UInt8(ascii: "_") else { return false }
        return utf8.allSatisfy {
            isASCIILetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
        }
    }

    private static func isASCIILetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
    }

    mutating func uuid(_ node: JSONNode, _ path: String) -> BluetoothUUID? {
        guard let text = string(node, path) else { return nil }
        guard let normalized = BluetoothUUID(text) else {
            error(
                node, path, "\"\(text)\" is not a UUID",
                hint: "use 16-bit (\"180f\"), 32-bit or 128-bit (\"1bc50001-0200-d29e-e511-446c609db825\") form")
            return nil
        }
        return normalized
    }

    /// UUIDs, where an entry may also be the id of a service in the profile (e.g. `"credential"`).
    mutating func uuidList(_ node: JSONNode, _ path: String) -> [BluetoothUUID]? {
        guard let items = array(node, path) else { return nil }
        var seen: Set<BluetoothUUID> = []
        return items.enumerated().compactMap { index, item -> BluetoothUUID? in
            if case .string(let text) = item.value, BluetoothUUID(text) == nil,
                let uuid = serviceUUIDsByID[text]
            {
                return uuid
            }
            return uuid(item, JSONPath.appending(index, to: path))
        }.filter { seen.insert($0).inserted }  // two services that share a UUID, named by id: advertised once
    }

    /// A byte or text template from a JSON string, queued for name checking.
    mutating func template(_ node: JSONNode, _ path: String, kind: Template.Kind, usage: TemplateUsage) -> Template? {
        guard let text = string(node, path) else { return nil }
        return template(text, node: node, path, kind: kind, usage: usage)
    }

    mutating func template(
        _ text: String, node: JSONNode, _ path: String, kind: Template.Kind, usage: TemplateUsage
    ) -> Template? {
        guard text.utf8.count <= ProfileLimits.templateLength else {
            error(node, path, "the template is \(text.utf8.count) bytes long, over the \(ProfileLimits.templateLength)-byte limit")
            return nil
        }
        do {
            let template: Template
            if let parsed = parsedTemplates[text], parsed.kind == kind {
                template = parsed
            } else {
                template = try Template.parse(text, kind: kind)
                parsedTemplates[text] = template
            }
            templates.append(PendingTemplate(template: template, usage: usage, path: path, location: node.location))
            return template
        } catch {
            self.error(at: Self.location(in: node, offset: error.offset), path, error.message, hint: error.hint)
            return nil
        }
    }

    /// The location of the character at `offset` (in `Character`s) of a JSON string node.
    static func location(in node: JSONNode, offset: Int) -> SourceLocation {
        guard case .string(let text) = node.value else { return location(in: node, scalarOffset: offset) }
        return location(in: node, scalarOffset: text.prefix(offset).unicodeScalars.count)
    }

    /// The location of the scalar at `scalarOffset` of a JSON string node. Exact when the string was written with
    /// the escapes JSON needs (`\\`, `\"`, `\n`, `\u001B`, …) and no others.
    static func location(in node: JSONNode, scalarOffset: Int) -> SourceLocation {
        var location = node.location
        location.column += 1
        guard case .string(let text) = node.value else {
            location.column += scalarOffset
            return location
        }
        for scalar in text.unicodeScalars.prefix(scalarOffset) {
            switch scalar {
            case "\"", "\\", "\u{08}", "\u{0C}", "\n", "\r", "\t": location.column += 2
            case "\u{00}"..."\u{1F}": location.column += 6
            default: location.column += 1
            }
        }
        if scalarOffset > text.unicodeScalars.count { location.column += scalarOffset - text.unicodeScalars.count }
        return location
    }

    /// A duration: milliseconds as a number, text as fault specs write it (``Patterns/duration``: `"250ms"`,
    /// `"1.5s"`), or the name of a number variable; at most ``ProfileLimits/maximumDurationMilliseconds``.
    mutating func duration(_ node: JSONNode, _ path: String) -> DurationSpec? {
        let maximum = ProfileLimits.maximumDurationMilliseconds
        if case .string(let text) = node.value {
            let milliseconds = StrictParse.milliseconds(text)
            if milliseconds == nil, Self.isIdentifier(text) { return .variable(text) }
            guard let milliseconds else {
                // Whole milliseconds or seconds with more digits than the grammar allows: too long, not malformed.
                let number = text.hasSuffix("ms") ? text.dropLast(2) : text.hasSuffix("s") ? text.dropLast() : Substring(text)
                if !number.isEmpty, number.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
                    error(node, path, "\"\(text)\" is longer than 24 hours (\(maximum) ms)")
                    return nil
                }
                error(
                    node, path, "\"\(text)\" is not a duration",
                    hint: "write milliseconds (500), \"500ms\", \"5s\" or the name of a number variable")
                return nil
            }
            guard milliseconds <= maximum else {
                error(node, path, "\"\(text)\" is longer than 24 hours (\(maximum) ms)")
                return nil
            }
            return .milliseconds(milliseconds)
        }
        return integer(node, path, in: 0...maximum).map { .milliseconds($0) }
    }
}
