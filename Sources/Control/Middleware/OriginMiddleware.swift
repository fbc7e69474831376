import HTTPTypes
import Hummingbird

/// Keeps other web pages out (CSRF): a request with an `Origin` that is neither the API's own
/// (`http://` + an accepted host) nor listed with `--control-allow-origin` is refused with 403, and so is a
/// cross-site browser request without one (`Sec-Fetch-Site`), except a top-level navigation (GET). Requests
/// without either header (curl, `gattemu ctl`) pass. Allowed cross-origin requests get the CORS headers;
/// their preflights are answered by ``OptionsMiddleware`` and completed here.
struct OriginMiddleware<Context: RequestContext>: RouterMiddleware {
    let policy: AccessPolicy

    /// Request headers a page may send (preflight answer).
    static var allowedHeaders: String { "Authorization, Content-Type, Last-Event-ID" }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let origins = request.headers[values: .origin]
        if origins.count > 1 { return refusal("more than one Origin header", request, context) }
        guard let origin = origins.first else {
            let site = request.headers[HTTPField.Name.secFetchSite]?.lowercased()
            if site == "cross-site" || site == "same-site", !isNavigation(request) {
                return refusal("a \(site ?? "") request from a web page is refused (no allowed Origin)", request, context)
            }
            return try await next(request, context)
        }
        if policy.isAllowed(origin: origin) {
            var response = try await next(request, context)
            response.headers[.accessControlAllowOrigin] = origin
            response.headers[values: .vary].append("Origin")
            if request.method == .options, request.headers[.accessControlRequestMethod] != nil {
                response.headers[.accessControlAllowMethods] = response.headers[.allow]
                response.headers[.accessControlAllowHeaders] = Self.allowedHeaders
                response.headers[.accessControlMaxAge] = "600"
            }
            return response
        }
        guard policy.isOwn(origin: origin) else {
            return refusal(
                "Origin \"\(origin.prefix(200))\" may not use this control API (start gattemu with --control-allow-origin ORIGIN to allow a page)",
                request, context)
        }
        var response = try await next(request, context)
        response.headers[values: .vary].append("Origin")
        return response
    }

    /// A top-level navigation (a link followed, an address typed; not a frame): it cannot read or change
    /// anything cross-site.
    func isNavigation(_ request: Request) -> Bool {
        request.method == .get && request.headers[HTTPField.Name.secFetchMode]?.lowercased() == "navigate"
            && request.headers[HTTPField.Name.secFetchDest]?.lowercased() == "document"
    }

    func refusal(_ message: String, _ request: Request, _ context: Context) -> Response {
        context.logger.info("control API: refused \(request.method) \(request.uri.path): \(message)")
        var response = ControlError(.forbidden, message).response
        response.headers[.vary] = "Origin"
        return response
    }
}

extension HTTPField.Name {
    /// Fetch metadata (sent by browsers): `same-origin`, `same-site`, `cross-site` or `none`.
    static let secFetchSite = Self("Sec-Fetch-Site")!
    static let secFetchMode = Self("Sec-Fetch-Mode")!
    static let secFetchDest = Self("Sec-Fetch-Dest")!
    static let host = Self("Host")!
    static let xFrameOptions = Self("X-Frame-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
}
