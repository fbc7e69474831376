import ControlBodies
import ControlContract
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

/// The small bodies of the API, decoded by ``ControlBody`` (module ControlBodies); its errors become 400 (409) answers.
enum Bodies {
    static func decoding<T>(_ decode: () throws(BodyError) -> T) throws(ControlError) -> T {
        do {
            return try decode()
        } catch {
            throw ControlError(error)
        }
    }
}

extension BasicRequestContext {
    /// A path parameter, percent-decoded (`00%3A11` → `00:11`); 400 for a malformed escape or invalid UTF-8.
    func parameter(_ name: String) throws(ControlError) -> String {
        let raw = parameters.get(name) ?? ""
        guard raw.contains("%") else { return raw }
        var bytes: [UInt8] = []
        var iterator = Array(raw.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16),
                [high, low].allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0) })
            else { throw ControlError.badRequest("\(name): malformed percent-encoding in \"\(raw.prefix(80))\"") }
            bytes.append(value)
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw ControlError.badRequest("\(name): not UTF-8 once decoded") }
        return text
    }
}
