import Hummingbird

/// Headers that keep every answer inert in a browser: a strict Content-Security-Policy (the dashboard's own
/// scripts, styles and API only; nothing inline, no frames, no plugins), no MIME sniffing, no framing, no
/// referrer. Event data a phone wrote is only ever put into the page as text (docs/control.md, "Dashboard").
enum SecurityHeaders {
    static var contentSecurityPolicy: String {
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
            + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    }

    /// The fields, set on every answer (by ``SecurityHeadersMiddleware``, and by ``ConnectionGuard`` on the
    /// refusals it writes itself).
    static var fields: HTTPFields {
        [
            .contentSecurityPolicy: contentSecurityPolicy, .xContentTypeOptions: "nosniff", .xFrameOptions: "DENY",
            .referrerPolicy: "no-referrer",
        ]
    }
}

/// Sets ``SecurityHeaders`` on every answer. It is the outermost middleware, so refusals (421, 403, 401, 503, 415)
/// and errors (404, 405, 413, 500) carry them too.
struct SecurityHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        for field in SecurityHeaders.fields { response.headers[field.name] = field.value }
        return response
    }
}
