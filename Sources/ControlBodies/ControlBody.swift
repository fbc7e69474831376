import Bluetooth
import ControlContract
import FoundationEssentials
import Lexical
import Profile

/// A request body the control API cannot use: the message (and extra fields) of its 400 answer, or 409 when
/// `conflict` (well-formed, but not possible: a value longer than ATT allows).
public struct BodyError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    /// Extra string fields for the JSON error body (e.g. `field`, `path`).
    public var details: [String: String]
    public var conflict: Bool

    public init(_ message: String, details: [String: String] = [:], conflict: Bool = false) {
        self.message = message
        self.details = details
        self.conflict = conflict
    }

    public var description: String { message }
}

/// Decoders for the control API's request bodies: pure functions of the bytes, without HTTP, so that
/// the routes, the tests and the `control` fuzz target share them. Each accepts exactly what its schema in
/// the contract (module ControlContract) allows, with line:column and field in its errors.
public enum ControlBody {
    /// Largest value a body may carry (the ATT limit).
    public static let maximumValueLength = ATTMTU.maximumValueLength
    /// Most faults one request may add.
    public static let maximumFaults = 64

    /// The body parsed as JSON (with line:column in syntax errors); nil when it is empty or only whitespace.
    public static func json(_ bytes: [UInt8]) throws(BodyError) -> JSONNode? {
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return nil }
        do {
            return try JSONParser.parse(bytes, file: "body")
        } catch {
            throw BodyError("malformed JSON: \(error.location.line):\(error.location.column): \(error.message)")
        }
    }

    /// `node`, which must be a JSON object; a missing body is an error when `required`.
    public static func object(_ node: JSONNode?, required: Bool = true) throws(BodyError) -> JSONNode? {
        guard let node else {
            if required { throw BodyError("missing JSON body") }
            return nil
        }
        guard case .object = node.value else { throw BodyError("expected a JSON object, found \(node.value.kindName)") }
        return node
    }

    /// ``ValueBody``: `{"hex": "51 60"}`, `{"utf8": "text"}` or `{"base64": "UWA="}` → bytes.
    public static func value(_ node: JSONNode) throws(BodyError) -> [UInt8] {
        guard case .object(let members) = node.value else { throw BodyError("expected a JSON object") }
        let known = ["hex", "utf8", "base64"]
        if let unknown = members.first(where: { !known.contains($0.key) }) {
            throw BodyError("unknown key \"\(unknown.key)\": give one of hex, utf8, base64")
        }
        guard members.count == 1, let member = members.first, let form = ValueForm(rawValue: member.key),
            let text = member.value.stringValue
        else {
            throw BodyError("give exactly one of {\"hex\": \"…\"}, {\"utf8\": \"…\"}, {\"base64\": \"…\"} as a string")
        }
        guard text.unicodeScalars.count <= form.textLimit else {
            throw BodyError("\(member.key): at most \(form.textLimit) characters", details: ["field": member.key])
        }
        guard let bytes = form.bytes(text) else {
            throw BodyError("bad \(member.key): \"\(text.prefix(80))\"", details: ["field": member.key])
        }
        guard bytes.count <= maximumValueLength else {
            throw BodyError(
                "value too long: \(bytes.count) bytes (at most \(maximumValueLength))", details: ["field": member.key], conflict: true)
        }
        return bytes
    }

    /// ``TriggerBody``: `{"arguments": {...}}` and/or flat members; scalar values become strings.
    public static func arguments(_ node: JSONNode?) throws(BodyError) -> [String: String] {
        guard let node else { return [:] }
        guard case .object(let members) = node.value else { throw BodyError("arguments: expected an object of name → value") }
        var arguments: [String: String] = [:]
        func add(_ key: String, _ value: JSONNode) throws(BodyError) {
            switch value.value {
            case .string(let s): arguments[key] = s
            case .number(let n): arguments[key] = n.int.map(String.init) ?? n.text
            case .bool(let b): arguments[key] = String(b)
            default: throw BodyError("argument \"\(key)\": expected a string, number or boolean", details: ["field": key])
            }
        }
        for member in members where member.key != "arguments" { try add(member.key, member.value) }
        if let nested = node["arguments"] {
            guard case .object(let inner) = nested.value else {
                throw BodyError("arguments: expected an object of name → value", details: ["field": "arguments"])
            }
            for member in inner { try add(member.key, member.value) }
        }
        return arguments
    }

    /// ``VariantBody``: `{"variant": "touched"}` → `"touched"`; `{"variant": null}` → nil (the base advertisement).
    public static func variant(_ node: JSONNode) throws(BodyError) -> String? {
        guard case .object(let members) = node.value else { throw BodyError("expected a JSON object") }
        if let unknown = members.first(where: { $0.key != "variant" }) {
            throw BodyError("unknown key \"\(unknown.key)\": give only \"variant\"")
        }
        guard let variantNode = node["variant"] else {
            throw BodyError("missing \"variant\" (a variant name, or null for the base advertisement)")
        }
        switch variantNode.value {
        case .null: return nil
        case .string(let name) where !name.isEmpty: return name
        default: throw BodyError("variant: expected a variant name or null", details: ["field": "variant"])
        }
    }

    /// ``VariableBody``: `{"value": "3E" | 2 | true | {"hex": "01 02"}}`.
    public static func variable(_ node: JSONNode) throws(BodyError) -> NamedValueBody {
        guard case .object(let members) = node.value else { throw BodyError("expected a JSON object") }
        if let unknown = members.first(where: { $0.key != "value" }) {
            throw BodyError("unknown key \"\(unknown.key)\": give only \"value\"")
        }
        guard let value = node["value"] else { throw BodyError("missing \"value\"") }
        let hint = "value: expected a string, a whole number, a boolean or {\"hex\": \"…\"}"
        switch value.value {
        case .string(let text):
            guard text.unicodeScalars.count <= ValueForm.utf8.textLimit else {
                throw BodyError("value: at most \(ValueForm.utf8.textLimit) characters", details: ["field": "value"])
            }
            return .string(text)
        case .bool(let flag): return .bool(flag)
        case .number(let number):
            guard let int = number.int else { throw BodyError(hint, details: ["field": "value"]) }
            return .integer(int)
        case .object(let inner):
            guard inner.count == 1, let hex = value["hex"]?.stringValue, hex.unicodeScalars.count <= ValueForm.hex.textLimit,
                ValueForm.hex.bytes(hex) != nil
            else {
                throw BodyError(hint, details: ["field": "value"])
            }
            return .hex(hex)
        default: throw BodyError(hint, details: ["field": "value"])
        }
    }

    /// ``ServiceBody``: `{"present": true|false}`, nothing else.
    public static func servicePresence(_ node: JSONNode) throws(BodyError) -> Bool {
        guard case .object(let members) = node.value else { throw BodyError("expected a JSON object") }
        if let unknown = members.first(where: { $0.key != "present" }) {
            throw BodyError("unknown key \"\(unknown.key.prefix(40))\": give only \"present\"")
        }
        guard let present = node["present"] else { throw BodyError("missing \"present\" (true adds the service, false removes it)") }
        guard case .bool(let value) = present.value else {
            throw BodyError("present: expected true or false", details: ["field": "present"])
        }
        return value
    }

    /// ``AddressBody``: `{"address": "random" | "original"}`, nothing else.
    public static func addressRequest(_ node: JSONNode) throws(BodyError) -> AddressRequest {
        guard case .object(let members) = node.value else { throw BodyError("expected a JSON object") }
        if let unknown = members.first(where: { $0.key != "address" }) {
            throw BodyError("unknown key \"\(unknown.key.prefix(40))\": give only \"address\"")
        }
        let hint = "address: \"random\" (a new address) or \"original\" (the adapter's own)"
        guard let value = node["address"] else { throw BodyError("missing \"address\" (\(hint))") }
        switch value.value {
        case .string("random"): return .random
        case .string("original"): return .original
        default: throw BodyError(hint, details: ["field": "address"])
        }
    }

    /// ``PairingAnswerBody``: `{"prompt": ID, "passkey": "012345" | 12345}` or `{"prompt": ID, "accept": true|false}`,
    /// nothing else.
    public static func pairingAnswer(_ node: JSONNode) throws(BodyError) -> (prompt: UInt64, reply: PairingReply) {
        guard case .object(let members) = node.value else { throw BodyError("expected a JSON object") }
        let hint =
            "give the prompt's id and exactly one of passkey and accept: {\"prompt\": 1, \"passkey\": \"123456\"} or {\"prompt\": 1, \"accept\": true|false}"
        if let unknown = members.first(where: { $0.key != "prompt" && $0.key != "passkey" && $0.key != "accept" }) {
            throw BodyError("unknown key \"\(unknown.key.prefix(40))\": \(hint)")
        }
        guard let promptNode = node["prompt"] else { throw BodyError("missing \"prompt\" (the id GET /v1/pairing shows): \(hint)") }
        guard case .number(let number) = promptNode.value, let prompt = number.int.flatMap(UInt64.init(exactly:)), prompt >= 1 else {
            throw BodyError("prompt: expected the prompt's id, a whole number from 1", details: ["field": "prompt"])
        }
        let answers = members.filter { $0.key != "prompt" }
        guard answers.count == 1, let member = answers.first else { throw BodyError(hint) }
        return (prompt, try reply(member))
    }

    private static func reply(_ member: JSONMember) throws(BodyError) -> PairingReply {
        if member.key == "accept" {
            guard case .bool(let accept) = member.value.value else {
                throw BodyError("accept: expected true or false", details: ["field": "accept"])
            }
            return .accept(accept)
        }
        let badPasskey = BodyError("passkey: expected six digits (\"012345\") or a number 0…999999", details: ["field": "passkey"])
        switch member.value.value {
        case .string(let text):
            guard let value = StrictParse.passkey(text) else { throw badPasskey }
            return .passkey(value)
        case .number(let number):
            guard let value = number.int.flatMap(UInt32.init(exactly:)), Passkey.range.contains(value) else {
                throw BodyError("passkey: expected 0…999999", details: ["field": "passkey"])
            }
            return .passkey(value)
        default: throw badPasskey
        }
    }

    /// ``FaultsBody``: one spec (`single`), an array of specs, or `{"faults": [...]}` (nothing else), at most
    /// ``maximumFaults``.
    public static func faults(_ node: JSONNode) throws(FaultSpecError) -> (specs: [FaultSpec], single: Bool) {
        if case .object(let members) = node.value {
            if node["faults"] == nil { return ([try FaultSpecDecoder.spec(node)], true) }
            if let other = members.first(where: { $0.key != "faults" }) {
                throw FaultSpecError(path: other.key, message: "a scenario object has only \"faults\"", location: other.value.location)
            }
        }
        let list = node["faults"] ?? node
        if case .array(let items) = list.value, items.count > maximumFaults {
            throw FaultSpecError(path: "faults", message: "at most \(maximumFaults) faults per request, found \(items.count)")
        }
        return (try FaultSpecDecoder.scenario(node), false)
    }
}
