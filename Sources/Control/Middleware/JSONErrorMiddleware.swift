import Hummingbird

/// Turns thrown errors and Hummingbird's own errors (unknown route, 405) into JSON error bodies.
///
/// A request the API did not expect to fail answers 500 `internal error` with a short reference; what went
/// wrong (which may name files or Swift types) goes to the server log under that reference only.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as ControlError {
            return error.response
        } catch let error as HTTPError where error.status.code < 500 {
            if error.status == .notFound || error.status == .methodNotAllowed, let methods = RouteMethods.allowed(for: request.uri.path) {
                var refusal = ControlError(.methodNotAllowed, "\(request.method) is not allowed on \(request.uri.path)") {
                    $0.allowed = methods
                }
                refusal.headers[.allow] = methods.joined(separator: ", ")
                return refusal.response
            }
            let message =
                error.body
                ?? (error.status == .notFound ? "no such endpoint: \(request.method) \(request.uri.path)" : error.status.reasonPhrase)
            return ControlError(error.status, message).response
        } catch {
            let hex = String(UInt32.random(in: 0...UInt32.max), radix: 16)
            let reference = String(repeating: "0", count: 8 - hex.count) + hex
            context.logger.error(
                "control API: internal error \(reference) answering \(request.method) \(request.uri.path): \(String(reflecting: error))")
            return ControlError(.internalServerError, "internal error (reference \(reference); details in gattemu's log)") {
                $0.reference = reference
            }.response
        }
    }
}
