import Hummingbird

/// Headers that keep every answer inert in a browser: a strict Content-Security-Policy (the dashboard's own
/// scripts, styles and API only; nothing inline, no frames, no plugins), no MIME sniffing, no framing, no
/// referrer. Event data a phone wrote is only ever put into the page as text (docs/control.md, "Dashboard").
struct SecurityHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    static var contentSecurityPolicy: String { "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
        + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.contentSecurityPolicy] = Self.contentSecurityPolicy
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[.xFrameOptions] = "DENY"
        response.headers[.referrerPolicy] = "no-referrer"
        return response
    }
}
