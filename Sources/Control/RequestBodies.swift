import ControlBodies
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
        return try Bodies.decoding { () throws(BodyError) in try ControlBody.json(Array(buffer.readableBytesView)) }
    }

    /// The body, which must be a JSON object.
    mutating func jsonObject(required: Bool = true) async throws(ControlError) -> JSONNode? {
        let node = try await jsonBody()
        return try Bodies.decoding { () throws(BodyError) in try ControlBody.object(node, required: required) }
    }
}

/// The small bodies of the API, decoded by ``ControlBody`` (module ControlBodies); its errors become 400 answers.
enum Bodies {
    static func value(_ node: JSONNode) throws(ControlError) -> [UInt8] {
        try decoding { () throws(BodyError) in try ControlBody.value(node) }
    }

    static func arguments(_ node: JSONNode?) throws(ControlError) -> [String: String] {
        try decoding { () throws(BodyError) in try ControlBody.arguments(node) }
    }

    static func variant(_ node: JSONNode) throws(ControlError) -> String? {
        try decoding { () throws(BodyError) in try ControlBody.variant(node) }
    }

    static func decoding<T>(_ decode: () throws(BodyError) -> T) throws(ControlError) -> T {
        do {
            return try decode()
        } catch {
            throw ControlError(error)
        }
    }
}
