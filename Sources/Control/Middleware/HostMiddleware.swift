import Hummingbird

/// Refuses requests whose `Host` does not name this server (DNS rebinding: a page of `evil.example`
/// whose name now resolves to 127.0.0.1 still says `Host: evil.example:8765`): 421 with the accepted hosts.
/// A missing `Host` (HTTP/1.0) or a repeated one is refused too.
struct HostMiddleware<Context: RequestContext>: RouterMiddleware {
    let policy: AccessPolicy

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // The first `Host` becomes the authority; a second one stays among the fields.
        let repeated = request.headers.contains(.host)
        guard let authority = request.head.authority, !repeated, let host = HostName(authority[...]), policy.accepts(host) else {
            let given =
                request.head.authority.map { "Host \"\($0.prefix(200))\" is not an address of this control API" }
                ?? "missing Host header"
            context.logger.info("control API: refused \(request.method) \(request.uri.path): \(given)")
            let accepted = policy.acceptedHosts()
            return ControlError(
                .misdirectedRequest,
                "\(repeated ? "more than one Host header" : given); use one of: \(accepted.joined(separator: ", ")) (or start gattemu with --control-allow-host NAME)"
            ) {
                $0.acceptedHosts = accepted
            }.response
        }
        return try await next(request, context)
    }
}
