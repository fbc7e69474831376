import Hummingbird

/// Answers `OPTIONS` for every route: 204 with `Allow` (no token needed: browsers send preflights
/// without one). ``OriginMiddleware`` adds the CORS headers for an allowed origin's preflight.
struct OptionsMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.method == .options else { return try await next(request, context) }
        guard let methods = RouteMethods.allowed(for: request.uri.path) else {
            throw ControlError.notFound("no such endpoint: OPTIONS \(request.uri.path)")
        }
        return Response(status: .noContent, headers: [.allow: methods.joined(separator: ", ")])
    }
}
