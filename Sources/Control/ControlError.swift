import ControlBodies
import FoundationEssentials
import Hummingbird
import Emulator
import Profile

/// A JSON error answer: `{"error": "...", ...details}` with an HTTP status.
public struct ControlError: Error, Sendable {
    public var status: HTTPResponse.Status
    public var message: String
    public var details: [String: JSONAny]

    public init(_ status: HTTPResponse.Status, _ message: String, details: [String: JSONAny] = [:]) {
        self.status = status
        self.message = message
        self.details = details
    }

    var response: Response {
        var object = details
        object["error"] = .string(message)
        object["status"] = .int(status.code)
        return JSONAny.object(object).response(status: status)
    }

    static func badRequest(_ message: String, _ details: [String: JSONAny] = [:]) -> ControlError { .init(.badRequest, message, details: details) }
    static func notFound(_ message: String, _ details: [String: JSONAny] = [:]) -> ControlError { .init(.notFound, message, details: details) }
}

extension ControlError {
    init(_ failure: ControlFailure) {
        let status: HTTPResponse.Status = switch failure.kind {
        case .notFound: .notFound
        case .invalid: .badRequest
        case .conflict: .conflict
        case .unavailable: .serviceUnavailable
        }
        self.init(status, failure.message, details: failure.details.mapValues { .array($0.map(JSONAny.string)) })
    }

    init(_ error: BodyError) {
        self.init(.badRequest, error.message, details: error.details.mapValues(JSONAny.string))
    }

    init(_ error: FaultSpecError) {
        var details: [String: JSONAny] = [:]
        if !error.path.isEmpty { details["path"] = .string(error.path) }
        self.init(.badRequest, "bad fault spec: \(error.description)", details: details)
    }
}

/// A small JSON value for building answers in a fixed key order (sorted) without `Any`.
public indirect enum JSONAny: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONAny])
    case object([String: JSONAny])
    /// Already-encoded JSON text, inserted as is.
    case raw(String)

    public var text: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .double(let d): return d.isFinite ? String(d) : "null"
        case .string(let s): return Self.quote(s)
        case .array(let items): return "[" + items.map(\.text).joined(separator: ",") + "]"
        case .object(let members):
            return "{" + members.sorted { $0.key < $1.key }.map { Self.quote($0.key) + ":" + $0.value.text }.joined(separator: ",") + "}"
        case .raw(let text): return text
        }
    }

    static func quote(_ s: String) -> String { JSONText.quoted(s) }

    func response(status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text + "\n")))
    }
}

extension JSONAny {
    /// A parsed value, numbers as written (duplicate keys: the last one).
    public init(_ node: JSONNode) {
        switch node.value {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .number(let n): self = .raw(n.text)
        case .string(let s): self = .string(s)
        case .array(let items): self = .array(items.map(JSONAny.init))
        case .object(let members):
            self = .object(Dictionary(members.map { ($0.key, JSONAny($0.value)) }, uniquingKeysWith: { _, last in last }))
        }
    }

    /// Encodes an `Encodable` value (status, fault listings) as raw JSON with sorted keys.
    static func encoded(_ value: some Encodable) -> JSONAny {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(value) else { return .null }
        return .raw(String(decoding: data, as: UTF8.self))
    }
}
