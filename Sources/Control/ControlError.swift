import ControlBodies
import ControlContract
import Emulator
import FoundationEssentials
import Hummingbird
import Profile

/// A JSON error answer (``ErrorBody``: `{"error": "...", "status": N, ...details}`) with its HTTP status.
public struct ControlError: HTTPResponseError, Sendable {
    public var status: HTTPResponse.Status
    public var body: ErrorBody
    /// Extra header fields (`Allow`, `WWW-Authenticate`).
    public var headers: HTTPFields = [:]

    public init(_ status: HTTPResponse.Status, _ message: String, _ details: (inout ErrorBody) -> Void = { _ in }) {
        self.status = status
        var body = ErrorBody(error: message, status: status.code)
        details(&body)
        self.body = body
    }

    public var message: String { body.error }

    public func response(from request: Request, context: some RequestContext) throws -> Response { response }

    var response: Response {
        var response = JSONResponse.make(body, status: status)
        response.headers.append(contentsOf: headers)
        return response
    }

    static func badRequest(_ message: String, _ details: (inout ErrorBody) -> Void = { _ in }) -> ControlError {
        .init(.badRequest, message, details)
    }
    static func notFound(_ message: String, _ details: (inout ErrorBody) -> Void = { _ in }) -> ControlError {
        .init(.notFound, message, details)
    }
}

extension ControlError {
    init(_ failure: ControlFailure) {
        let status: HTTPResponse.Status =
            switch failure.kind {
            case .notFound: .notFound
            case .invalid: .badRequest
            case .conflict: .conflict
            case .unavailable: .serviceUnavailable
            }
        self.init(status, failure.message) { body in
            body.known = failure.details["known"]
            body.connected = failure.details["connected"]
        }
    }

    init(_ error: BodyError) {
        self.init(error.conflict ? .conflict : .badRequest, error.message) { body in
            body.field = error.details["field"]
            body.path = error.details["path"]
        }
    }

    init(_ error: FaultSpecError, known: [String]? = nil) {
        let status: HTTPResponse.Status =
            switch error.kind {
            case .invalid: .badRequest
            case .notFound: .notFound
            case .conflict: .conflict
            }
        self.init(status, "bad fault spec: \(error.description)") { body in
            if !error.path.isEmpty { body.path = error.path }
        }
    }
}

/// JSON answers encoded from the contract's types (keys sorted, one line, a final newline).
enum JSONResponse {
    static func make(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var bytes =
            (try? encoder.encode(value)).map { Array($0) } ?? Array(#"{"error":"internal error: unencodable answer","status":500}"#.utf8)
        bytes.append(0x0A)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
