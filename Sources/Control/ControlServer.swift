import ControlContract
import Emulator
import FoundationEssentials
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// The control API server: Hummingbird 2 on one address, serving `/v1` and the dashboard (`/`) for one device or a rig's (``ControlDevices``).
///
/// Middleware, outermost first: ``SecurityHeadersMiddleware`` (CSP and friends, on every answer), ``HostMiddleware``
/// (421), ``OriginMiddleware`` (403, CORS), ``JSONErrorMiddleware``, ``OptionsMiddleware`` (204),
/// ``BearerTokenMiddleware`` (401; not for the dashboard's static files), ``StartingMiddleware`` (503 until
/// ``readiness`` is marked), ``ContentTypeMiddleware`` (415). Connections are limited, and other local users refused,
/// by ``ConnectionGuard`` (docs/control.md, "Security").
public struct ControlServer: Sendable {
    public let endpoint: ControlEndpoint
    public let token: String?
    public let access: ControlAccess
    public let limits: ControlLimits
    /// Requests reach the target only once this is marked ready (503 before: see ``StartingMiddleware``).
    public let readiness: Readiness
    /// What the API drives: one device, or a rig's.
    public let devices: ControlDevices
    let listening = ListeningPort()
    let streams: EventStreamSlots
    let connections: ConnectionRegistry

    /// One device, `device` its id under `/v1/devices/`. Refuses a non-loopback endpoint without a token.
    public init(
        endpoint: ControlEndpoint, token: String?, target: any ControlTarget, device: String = "device",
        access: ControlAccess = ControlAccess(), limits: ControlLimits = ControlLimits(),
        ready: Bool = true
    ) throws(ControlSetupError) {
        let devices = ControlDevices(id: device, profile: "", adapter: nil, target: target)
        if ready { devices.set(device, .running) }
        try self.init(endpoint: endpoint, token: token, devices: devices, access: access, limits: limits, ready: ready)
    }

    /// Refuses a non-loopback endpoint without a token.
    public init(
        endpoint: ControlEndpoint, token: String?, devices: ControlDevices,
        access: ControlAccess = ControlAccess(), limits: ControlLimits = ControlLimits(),
        ready: Bool = true
    ) throws(ControlSetupError) {
        if let token, token.isEmpty { throw ControlSetupError(message: "--control-token must not be empty") }
        if !endpoint.isLoopback, token == nil {
            throw ControlSetupError(message: "the control API on \(endpoint) (not loopback) needs --control-token TOKEN")
        }
        self.endpoint = endpoint
        self.token = token
        self.devices = devices
        self.access = access
        self.limits = limits
        self.readiness = Readiness(ready: ready)
        self.streams = EventStreamSlots(maximum: limits.maximumEventStreams)
        self.connections = ConnectionRegistry(maximum: limits.maximumConnections)
    }

    /// The port the server listens on, once bound (the real one when 0 was asked).
    public var boundPort: Int? { listening.port }

    /// The router with every route and middleware; tests call it in-process (Tests/ControlTests/RouterClient.swift,
    /// which says `Host: localhost`, that is port 80).
    public func router() -> Router<BasicRequestContext> {
        let policy = AccessPolicy(endpoint: endpoint, access: access, listening: listening)
        let router = Router()
        router.add(middleware: SecurityHeadersMiddleware())
        router.add(middleware: HostMiddleware(policy: policy))
        router.add(middleware: OriginMiddleware(policy: policy))
        router.add(middleware: JSONErrorMiddleware())
        router.add(middleware: OptionsMiddleware())
        if let token { router.add(middleware: BearerTokenMiddleware(token: token)) }
        router.add(middleware: StartingMiddleware(readiness: readiness))
        router.add(middleware: ContentTypeMiddleware())
        ControlRouting(devices: devices, streams: streams, heartbeat: limits.heartbeat, streamLifetime: limits.eventStreamLifetime)
            .register(on: router)
        return router
    }

    /// The Hummingbird application; `onRunning` gets the bound address (the real port when 0 was asked).
    public func application(
        logger: Logger = Logger(label: "gattemu.control"),
        onRunning: @escaping @Sendable (String) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let idleTimeout = limits.idleTimeout
        let http = HTTP1Channel.Configuration(
            additionalChannelHandlers: [
                ConnectionGuard(registry: connections, timeout: idleTimeout, logger: logger, access: access, token: token)
            ],
            idleTimeout: TimeAmount(idleTimeout))
        return Application(
            router: router(),
            server: .http1(configuration: http),
            configuration: .init(
                address: .hostname(endpoint.host, port: endpoint.port), serverName: "gattemu", backlog: limits.maximumConnections),
            onServerRunning: { [listening, endpoint] channel in
                // Before any request is handled: Hummingbird serves connections only once this returns.
                if let port = channel.localAddress?.port { listening.set(port) }
                let address = channel.localAddress.map {
                    ControlEndpoint.authority($0.ipAddress ?? endpoint.host, port: $0.port ?? endpoint.port)
                }
                await onRunning(address ?? endpoint.description)
            },
            logger: logger)
    }

    /// Serves until the task is cancelled, then shuts down gracefully: no new connections, open responses
    /// (event streams included) finish within ``shutdownGrace``, then the rest is cut off.
    public func run(logger: Logger = Logger(label: "gattemu.control"), onRunning: @escaping @Sendable (String) async -> Void = { _ in })
        async throws
    {
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
