import Hummingbird
import Lexical

/// A request with a body must say `Content-Type: application/json` (parameters allowed; a charset only
/// `utf-8`), else 415. This keeps out HTML forms and `text/plain` fetches, which browsers send cross-site
/// without asking first. Bodiless requests (`POST /v1/reset`) need no content type.
struct ContentTypeMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard Self.hasBody(request) else { return try await next(request, context) }
        guard let contentType = request.headers[.contentType] else {
            throw ControlError(.unsupportedMediaType, "a request body needs Content-Type: application/json")
        }
        guard Self.isJSON(contentType) else {
            throw ControlError(.unsupportedMediaType, "Content-Type must be application/json, not \"\(contentType.prefix(100))\"")
        }
        return try await next(request, context)
    }

    /// A non-zero `Content-Length` or any `Transfer-Encoding`.
    static func hasBody(_ request: Request) -> Bool {
        if request.headers[.transferEncoding] != nil { return true }
        return request.headers[values: .contentLength].contains { $0[...].trimmingBlanks != "0" }
    }

    /// `application/json`, any case, with optional parameters; a `charset` must be `utf-8`.
    static func isJSON(_ value: String) -> Bool {
        let parts = value.split(separator: ";", omittingEmptySubsequences: false).map { $0.trimmingBlanks.lowercased() }
        guard parts.first == "application/json" else { return false }
        for parameter in parts.dropFirst() where parameter.hasPrefix("charset=") {
            let charset = parameter.dropFirst("charset=".count).filter { $0 != "\"" }
            if charset != "utf-8" && charset != "utf8" { return false }
        }
        return true
    }
}
