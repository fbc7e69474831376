import FoundationEssentials
import Profile

/// A request body the control API cannot use: the message (and extra fields) of its 400 answer.
public struct BodyError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    /// Extra string fields for the JSON error body (e.g. `field`, `path`).
    public var details: [String: String]

    public init(_ message: String, details: [String: String] = [:]) {
        self.message = message
        self.details = details
    }

    public var description: String { message }
}

/// Decoders for the control API's request bodies: pure functions of the bytes, without HTTP, so that
/// the routes, the tests and the `control` fuzz target share them.
public enum ControlBody {
    /// Largest value a body may carry (the ATT limit).
    public static let maximumValueLength = 512

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

    /// `{"hex": "51 60"}`, `{"utf8": "text"}` or `{"base64": "UWA="}` → bytes.
    public static func value(_ node: JSONNode) throws(BodyError) -> [UInt8] {
        guard case .object(let members) = node.value else { throw BodyError("expected a JSON object") }
        let known = ["hex", "utf8", "base64"]
        if let unknown = members.first(where: { !known.contains($0.key) }) {
            throw BodyError("unknown key \"\(unknown.key)\": give one of hex, utf8, base64")
        }
        guard members.count == 1, let member = members.first, let text = member.value.stringValue else {
            throw BodyError("give exactly one of {\"hex\": \"…\"}, {\"utf8\": \"…\"}, {\"base64\": \"…\"} as a string")
        }
        let bytes: [UInt8]?
        switch member.key {
        case "hex": bytes = FaultSpecDecoder.parseHex(text)
        case "utf8": bytes = Array(text.utf8)
        default: bytes = Data(base64Encoded: text).map { Array($0) }
        }
        guard let bytes else { throw BodyError("bad \(member.key): \"\(text.prefix(80))\"", details: ["field": member.key]) }
        guard bytes.count <= maximumValueLength else {
            throw BodyError("value too long: \(bytes.count) bytes (at most \(maximumValueLength))")
        }
        return bytes
    }

    /// Trigger arguments: `{"arguments": {...}}` or a flat object; scalar values become strings.
    public static func arguments(_ node: JSONNode?) throws(BodyError) -> [String: String] {
        guard var node else { return [:] }
        if let nested = node["arguments"] { node = nested }
        guard case .object(let members) = node.value else { throw BodyError("arguments: expected an object of name → value") }
        var arguments: [String: String] = [:]
        for member in members {
            switch member.value.value {
            case .string(let s): arguments[member.key] = s
            case .number(let n): arguments[member.key] = n.int.map(String.init) ?? n.text
            case .bool(let b): arguments[member.key] = String(b)
            default: throw BodyError("argument \"\(member.key)\": expected a string, number or boolean")
            }
        }
        return arguments
    }

    /// `{"variant": "touched"}` → `"touched"`; `{"variant": null}` → nil (the base advertisement).
    public static func variant(_ node: JSONNode) throws(BodyError) -> String? {
        guard let variantNode = node["variant"] else {
            throw BodyError("missing \"variant\" (a variant name, or null for the base advertisement)")
        }
        switch variantNode.value {
        case .null: return nil
        case .string(let name): return name
        default: throw BodyError("variant: expected a string or null")
        }
    }

    /// Fault specs: one spec (`single`), an array of specs, or `{"faults": [...]}`.
    public static func faults(_ node: JSONNode) throws(FaultSpecError) -> (specs: [FaultSpec], single: Bool) {
        if case .object = node.value, node["faults"] == nil {
            return ([try FaultSpecDecoder.spec(node)], true)
        }
        return (try FaultSpecDecoder.scenario(node), false)
    }
}
