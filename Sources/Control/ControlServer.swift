import Emulator
import FoundationEssentials
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// The control API server: Hummingbird 2 on one address, serving `/v1` for one ``ControlTarget``.
public struct ControlServer: Sendable {
    public let endpoint: ControlEndpoint
    public let token: String?
    let target: any ControlTarget

    /// Refuses a non-loopback endpoint without a token.
    public init(endpoint: ControlEndpoint, token: String?, target: any ControlTarget) throws(ControlSetupError) {
        if let token, token.isEmpty { throw ControlSetupError(message: "--control-token must not be empty") }
        if !endpoint.isLoopback, token == nil {
            throw ControlSetupError(message: "the control API on \(endpoint) (not loopback) needs --control-token TOKEN")
        }
        self.endpoint = endpoint
        self.token = token
        self.target = target
    }

    /// The router with every route and middleware; tests use it with HummingbirdTesting.
    public func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.add(middleware: JSONErrorMiddleware())
        if let token { router.add(middleware: BearerTokenMiddleware(token: token)) }
        ControlRoutes(target: target).register(on: router)
        return router
    }

    /// The Hummingbird application; `onRunning` gets the bound address (the real port when 0 was asked).
    public func application(logger: Logger = Logger(label: "gattemu.control"),
                            onRunning: @escaping @Sendable (String) async -> Void = { _ in }) -> some ApplicationProtocol {
        Application(
            router: router(),
            configuration: .init(address: .hostname(endpoint.host, port: endpoint.port), serverName: "gattemu"),
            onServerRunning: { channel in
                let address = channel.localAddress.map { "\($0.ipAddress ?? endpoint.host):\($0.port ?? endpoint.port)" } ?? endpoint.description
                await onRunning(address)
            },
            logger: logger)
    }

    /// Serves until the task is cancelled, then shuts down gracefully: no new connections, open responses
    /// (event streams included) finish within ``shutdownGrace``, then the rest is cut off.
    public func run(logger: Logger = Logger(label: "gattemu.control"), onRunning: @escaping @Sendable (String) async -> Void = { _ in }) async throws {
        // Named: without a name the group describes the service with `"\(service)"`, reflecting the whole
        // application at start (≈ 0.5 M instructions, callgrind).
        let service = ServiceGroupConfiguration.ServiceConfiguration(
            service: application(logger: logger, onRunning: onRunning), serviceName: "gattemu control API")
        var configuration = ServiceGroupConfiguration(services: [service], logger: logger)
        configuration.maximumGracefulShutdownDuration = Self.shutdownGrace
        let group = ServiceGroup(configuration: configuration)
        // Unstructured, so that cancelling this task asks for a graceful shutdown instead of cutting
        // every connection at once (which cancelling `group.run()` itself would do).
        let serving = Task { try await group.run() }
        try await withTaskCancellationHandler {
            try await serving.value
        } onCancel: {
            Task { await group.triggerGracefulShutdown() }
        }
    }

    /// How long open responses may take to finish once the server is asked to stop.
    public static let shutdownGrace: Duration = .seconds(2)
}

/// The control API cannot start with these options.
public struct ControlSetupError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }

    public init(message: String) {
        self.message = message
    }
}

/// Requires `Authorization: Bearer TOKEN` on every request (401 JSON error otherwise).
struct BearerTokenMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let given = request.headers[.authorization].flatMap { header -> Substring? in
            let parts = header.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
            return parts[1]
        }
        guard let given, Self.constantTimeEquals(Array(given.utf8), Array(token.utf8)) else {
            var response = ControlError(.unauthorized, given == nil ? "missing Authorization: Bearer token" : "wrong token").response
            response.headers[.wwwAuthenticate] = "Bearer realm=\"gattemu\""
            return response
        }
        return try await next(request, context)
    }

    static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// Turns thrown errors and Hummingbird's own errors (unknown route, 405) into JSON error bodies.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as ControlError {
            return error.response
        } catch let error as HTTPError {
            let message = error.body ?? (error.status == .notFound ? "no such endpoint: \(request.method) \(request.uri.path)" : error.status.reasonPhrase)
            return ControlError(error.status, message).response
        } catch {
            return ControlError(.internalServerError, "internal error: \(error)").response
        }
    }
}
