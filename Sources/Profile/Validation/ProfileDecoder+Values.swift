import Bluetooth
import JSON
import Lexical

extension ProfileDecoder {
    static let valueForms = ["hex", "utf8", "base64", "random", "template", "bytes"]

    /// A value: a byte-template string, `[0x51, …]` as numbers, or one of
    /// `{"hex"}`, `{"utf8"}`, `{"base64"}`, `{"random": N}`, `{"template"}` (the last two with `regenerate`).
    /// `limit`: the most bytes of a literal (an attribute's 512; an SDU's value, ``ProfileLimits/valueLength``).
    mutating func valueSource(
        _ node: JSONNode, _ path: String, usage: TemplateUsage, limit: Int = ATTMTU.maximumValueLength
    ) -> ValueSource? {
        switch node.value {
        case .string:
            return template(node, path, kind: .bytes, usage: usage).map { ValueSource(template: $0) }
        case .array(let items):
            var bytes: [UInt8] = []
            for (index, item) in items.enumerated() {
                guard let byte = integer(item, JSONPath.appending(index, to: path), in: 0...255) else { return nil }
                bytes.append(UInt8(byte))
            }
            return attributeSized(bytes, node, path, limit: limit).map { ValueSource(template: .literal($0)) }
        case .object:
            guard let members = members(node, path, allowed: Self.valueForms + ["regenerate"]) else { return nil }
            let forms = members.filter { Self.valueForms.contains($0.key) }
            guard forms.count == 1, let form = forms.first else {
                error(
                    node, path,
                    forms.isEmpty
                        ? "a value object needs one of \(Self.valueForms.filter { $0 != "bytes" }.map { "\"\($0)\"" }.joined(separator: ", "))"
                        : "a value object takes only one of \(forms.map { "\"\($0.key)\"" }.joined(separator: ", "))")
                return nil
            }
            let formPath = JSONPath.appending(form.key, to: path)
            var regenerate = Regeneration.never
            if let regenerateNode = node["regenerate"] {
                let regeneratePath = JSONPath.appending("regenerate", to: path)
                guard form.key == "random" || form.key == "template" else {
                    error(regenerateNode, regeneratePath, "\"regenerate\" only applies to \"random\" and \"template\" values")
                    return nil
                }
                guard usage == .initialValue else {
                    error(regenerateNode, regeneratePath, "\"regenerate\" only applies to initial values")
                    return nil
                }
                guard let text = string(regenerateNode, regeneratePath) else { return nil }
                guard let value = Regeneration(rawValue: text) else {
                    error(
                        regenerateNode, regeneratePath, "unknown regeneration \"\(text)\"",
                        hint: Suggestions.hint(for: text, in: Regeneration.allCases.map(\.rawValue))
                            ?? "use \"never\", \"connection\" or \"read\"")
                    return nil
                }
                regenerate = value
            }
            switch form.key {
            case "random":
                guard usage != .advertisement else {
                    error(form.value, formPath, "random values cannot be used here")
                    return nil
                }
                guard let count = integer(form.value, formPath, in: 0...TemplateBuiltins.maximumLength) else { return nil }
                let template = Template(
                    source: "{random(\(count))}", kind: .bytes,
                    parts: [.expression(.call("random", [.integer(count, offset: 8)], offset: 1), offset: 0)])
                return ValueSource(template: template, regenerate: regenerate)
            case "template":
                return template(form.value, formPath, kind: .bytes, usage: usage)
                    .map { ValueSource(template: $0, regenerate: regenerate) }
            default:
                return literalBytes(form.key, form.value, formPath).flatMap { attributeSized($0, form.value, formPath, limit: limit) }
                    .map { ValueSource(template: .literal($0)) }
            }
        default:
            typeError(node, path, expected: "a byte template string or a value object such as {\"hex\": \"01 02\"}")
            return nil
        }
    }

    /// `bytes` when they fit in an attribute (``ATTMTU/maximumValueLength``), or in `limit` (an SDU's value); else
    /// reported, nil.
    mutating func attributeSized(
        _ bytes: [UInt8], _ node: JSONNode, _ path: String, limit: Int = ATTMTU.maximumValueLength
    ) -> [UInt8]? {
        guard bytes.count <= limit else {
            let what = limit == ATTMTU.maximumValueLength ? "attribute limit" : "limit of a value"
            error(node, path, "value is \(bytes.count) bytes, over the \(limit)-byte \(what)")
            return nil
        }
        return bytes
    }

    /// The bytes of a `hex`, `utf8` or `base64` literal: ``ValueForm``, the grammar fault specs and the control
    /// API share.
    mutating func literalBytes(_ form: String, _ node: JSONNode, _ path: String) -> [UInt8]? {
        guard let text = string(node, path) else { return nil }
        switch form {
        case "hex", "bytes":
            guard let bytes = ValueForm.hex.bytes(text) else {
                error(node, path, "\"\(text)\" is not valid hex", hint: "write bytes as pairs of hex digits, e.g. \"51 60 0a\"")
                return nil
            }
            return bytes
        case "base64":
            guard let bytes = ValueForm.base64.bytes(text) else {
                error(node, path, "\"\(text)\" is not valid base64")
                return nil
            }
            return bytes
        default:
            return ValueForm.utf8.bytes(text)
        }
    }

    /// A variable, state or comparison value: a number, string, boolean, or `{"hex"|"utf8"|"base64": …}` bytes;
    /// strings and bytes of at most ``ProfileLimits/valueLength`` bytes.
    mutating func profileValue(_ node: JSONNode, _ path: String) -> ProfileValue? {
        guard let value = unboundedProfileValue(node, path) else { return nil }
        let length: Int =
            switch value {
            case .string(let text): text.utf8.count
            case .bytes(let bytes): bytes.count
            case .number, .bool: 0
            }
        guard length <= ProfileLimits.valueLength else {
            error(node, path, "value is \(length) bytes, over the \(ProfileLimits.valueLength)-byte limit for values")
            return nil
        }
        return value
    }

    private mutating func unboundedProfileValue(_ node: JSONNode, _ path: String) -> ProfileValue? {
        switch node.value {
        case .number(let number):
            guard let value = number.int else {
                error(node, path, "\(number.text) is not an integer", hint: "values are whole numbers")
                return nil
            }
            return .number(value)
        case .string(let text):
            return .string(text)
        case .bool(let value):
            return .bool(value)
        case .object:
            guard let members = members(node, path, allowed: ["hex", "utf8", "base64"]), members.count == 1,
                let member = members.first
            else {
                if case .object(let m) = node.value, m.count != 1 {
                    error(node, path, "a bytes value takes exactly one of \"hex\", \"utf8\", \"base64\"")
                }
                return nil
            }
            return literalBytes(member.key, member.value, JSONPath.appending(member.key, to: path)).map { .bytes($0) }
        default:
            typeError(node, path, expected: "a number, string, boolean or {\"hex\": …}")
            return nil
        }
    }

    /// An ATT error by name (`"not-permitted"`) or application code 0x80...0x9F.
    mutating func attError(_ node: JSONNode, _ path: String) -> ATTError? {
        if case .string(let text) = node.value, let named = ATTError.namesInProfiles[text] { return named }
        if case .string(let text) = node.value, !text.lowercased().hasPrefix("0x"), Int(text) == nil {
            error(
                node, path, "unknown ATT error \"\(text)\"",
                hint: Suggestions.hint(for: text, in: ATTError.namesInProfiles.keys.sorted())
                    ?? "use a name such as \"not-permitted\" or an application code 0x80...0x9F")
            return nil
        }
        return flexibleInteger(node, path, in: 0x80...0x9F).map { .application(UInt8($0)) }
    }
}
