import ControlContract
import Hummingbird

/// Requires `Authorization: Bearer TOKEN` on every request (401 JSON error otherwise) but `GET` of the
/// dashboard's static files, which hold no data (the page then asks for the token and sends it as this
/// header; docs/control.md, "Dashboard"). ``OptionsMiddleware`` answers OPTIONS before it.
struct BearerTokenMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if ControlContract.operation(request.method.rawValue, path: request.uri.path)?.isPublic == true {
            return try await next(request, context)
        }
        let given = request.headers[.authorization].flatMap { header -> Substring? in
            let parts = header.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
            return parts[1]
        }
        guard let given, Self.constantTimeEquals(Array(given.utf8), Array(token.utf8)) else {
            var error = ControlError(.unauthorized, given == nil ? "missing Authorization: Bearer token" : "wrong token")
            error.headers[.wwwAuthenticate] = "Bearer realm=\"gattemu\""
            return error.response
        }
        return try await next(request, context)
    }

    static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
