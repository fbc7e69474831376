import Emulator
import FoundationEssentials
import Hummingbird
import Profile

/// Largest request body accepted (1 MiB).
let maximumBodySize = 1 << 20

extension Request {
    /// The body parsed as JSON (with line:column in syntax errors); nil when the body is empty.
    mutating func jsonBody() async throws(ControlError) -> JSONNode? {
        let buffer: ByteBuffer
        do {
            buffer = try await body.collect(upTo: maximumBodySize)
        } catch {
            throw ControlError(.contentTooLarge, "request body larger than \(maximumBodySize) bytes")
        }
        let bytes = Array(buffer.readableBytesView)
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return nil }
        do {
            return try JSONParser.parse(bytes, file: "body")
        } catch {
            throw .badRequest("malformed JSON: \(error.location.line):\(error.location.column): \(error.message)")
        }
    }

    /// The body, which must be a JSON object.
    mutating func jsonObject(required: Bool = true) async throws(ControlError) -> JSONNode? {
        guard let node = try await jsonBody() else {
            if required { throw .badRequest("missing JSON body") }
            return nil
        }
        guard case .object = node.value else { throw .badRequest("expected a JSON object, found \(node.value.kindName)") }
        return node
    }
}

/// Decoders for the small bodies of the API.
enum Bodies {
    /// `{"hex": "51 60"}`, `{"utf8": "text"}` or `{"base64": "UWA="}` → bytes.
    static func value(_ node: JSONNode) throws(ControlError) -> [UInt8] {
        guard case .object(let members) = node.value else { throw .badRequest("expected a JSON object") }
        let known = ["hex", "utf8", "base64"]
        if let unknown = members.first(where: { !known.contains($0.key) }) {
            throw .badRequest("unknown key \"\(unknown.key)\": give one of hex, utf8, base64")
        }
        guard members.count == 1, let member = members.first, let text = member.value.stringValue else {
            throw .badRequest("give exactly one of {\"hex\": \"…\"}, {\"utf8\": \"…\"}, {\"base64\": \"…\"} as a string")
        }
        let bytes: [UInt8]?
        switch member.key {
        case "hex": bytes = FaultSpecDecoder.parseHex(text)
        case "utf8": bytes = Array(text.utf8)
        default: bytes = Data(base64Encoded: text).map { Array($0) }
        }
        guard let bytes else { throw .badRequest("bad \(member.key): \"\(text.prefix(80))\"", ["field": .string(member.key)]) }
        guard bytes.count <= 512 else { throw .badRequest("value too long: \(bytes.count) bytes (at most 512)") }
        return bytes
    }

    /// Trigger arguments: `{"arguments": {...}}` or a flat object; scalar values become strings.
    static func arguments(_ node: JSONNode?) throws(ControlError) -> [String: String] {
        guard var node else { return [:] }
        if let nested = node["arguments"] { node = nested }
        guard case .object(let members) = node.value else { throw .badRequest("arguments: expected an object of name → value") }
        var arguments: [String: String] = [:]
        for member in members {
            switch member.value.value {
            case .string(let s): arguments[member.key] = s
            case .number(let n): arguments[member.key] = n.int.map(String.init) ?? n.text
            case .bool(let b): arguments[member.key] = String(b)
            default: throw .badRequest("argument \"\(member.key)\": expected a string, number or boolean")
            }
        }
        return arguments
    }
}
