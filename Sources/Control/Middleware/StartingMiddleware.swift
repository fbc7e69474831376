import ControlContract
import Hummingbird
import Synchronization

/// Whether the device behind the API has started: the server listens before gattemu registers with
/// bluetoothd (so the API is up before the device is on air), and answers until then with 503.
public final class Readiness: Sendable {
    private let value: Atomic<Bool>

    public init(ready: Bool) { value = Atomic(ready) }

    public var isReady: Bool { value.load(ordering: .acquiring) }

    /// From now on requests reach the device.
    public func markReady() { value.store(true, ordering: .releasing) }
}

/// Until ``Readiness/markReady()``, every request but the dashboard's static files gets 503 with
/// `Retry-After: 1`: nothing behind the API exists yet.
struct StartingMiddleware<Context: RequestContext>: RouterMiddleware {
    let readiness: Readiness

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if readiness.isReady || ControlContract.operation(request.method.rawValue, path: request.uri.path)?.isPublic == true {
            return try await next(request, context)
        }
        var error = ControlError(.serviceUnavailable, "gattemu is starting (registering the device with bluetoothd): retry")
        error.headers[.retryAfter] = "1"
        return error.response
    }
}
