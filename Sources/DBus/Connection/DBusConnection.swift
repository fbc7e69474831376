import CDBus
import Synchronization

/// A private connection to a message bus, served by its own event-loop thread.
///
/// All methods may be called from any thread or task; handlers given to it (signal handlers,
/// caller policies, property getters) run on the connection's thread and must not block.
/// A connection lives, with its thread, until ``close()`` or until the bus drops it.
///
/// `@unchecked Sendable`: the libdbus connection and every mutable field except `state` (a mutex) are
/// touched only on `loop`'s thread; public methods hop there with `loop.submit`.
public final class DBusConnection: @unchecked Sendable {
    /// The thread that serves this connection; a loop shared with others (``connect(to:on:)``) serves them all.
    public let loop: DBusEventLoop
    /// Whether `loop` was made for this connection (and stops with it).
    private let ownsLoop: Bool
    /// Set on the loop thread once the libdbus connection is closed and released; jobs check it.
    private var released = false
    let pointer: OpaquePointer
    /// The unique bus name assigned by the bus, e.g. `:1.42`.
    public let uniqueName: String

    var signalSubscriptions: [UInt64: SignalSubscription] = [:]
    var nextSubscriptionID: UInt64 = 1
    var objects = DBusObjectRegistry()
    /// Well-known names whose owner is followed (see ``watchNameOwner(_:handler:)``).
    var followedNames: [String: FollowedName] = [:]
    /// The gate of the latest method call handed to a handler (see ``DBusMethodCall/begin()``).
    var lastMethodCall: DBusCallGate?
    let state = Mutex(State())

    struct State {
        var isConnected = true
        var disconnectHandlers: [@Sendable () -> Void] = []
        var refusalHandlers: [@Sendable (DBusRefusal) -> Void] = []
        /// Owners of the followed names, as last heard from the bus.
        var nameOwners: [String: String] = [:]
    }

    /// Connects to `bus` and registers with it, served by `loop` (shared, it outlives the connection) or by
    /// a loop of its own (stopped on close).
    public static func connect(to bus: DBusBus, on loop: DBusEventLoop? = nil) async throws(DBusError) -> DBusConnection {
        // libdbus is thread-safe only after this call; it is idempotent.
        dbus_threads_init_default()
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let connection: OpaquePointer?
        switch bus {
        case .system:
            connection = dbus_bus_get_private(DBUS_BUS_SYSTEM, &error)
        case .session:
            connection = dbus_bus_get_private(DBUS_BUS_SESSION, &error)
        case .address(let address):
            connection = dbus_connection_open_private(address, &error)
            if let connection, dbus_bus_register(connection, &error) == 0 {
                dbus_connection_close(connection)
                dbus_connection_unref(connection)
                throw .connectionFailed(Self.message(of: error))
            }
        }
        guard let connection else { throw .connectionFailed(Self.message(of: error)) }
        dbus_connection_set_exit_on_disconnect(connection, 0)
        let uniqueName = dbus_bus_get_unique_name(connection).map { String(cString: $0) } ?? ""
        let created: DBusConnection
        do {
            created = try DBusConnection(pointer: connection, uniqueName: uniqueName, loop: loop)
        } catch {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw error
        }
        // Messages that arrived meanwhile wait in libdbus's queue; the loop dispatches them once attached.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            created.loop.submit(
                {
                    created.loop.attach(created.pointer)
                    continuation.resume()
                }, abandoned: { continuation.resume() })
        }
        return created
    }

    private init(pointer: OpaquePointer, uniqueName: String, loop: DBusEventLoop?) throws(DBusError) {
        self.pointer = pointer
        self.uniqueName = uniqueName
        self.ownsLoop = loop == nil
        if let loop {
            self.loop = loop
        } else {
            self.loop = try DBusEventLoop(name: "dbus \(uniqueName)")
        }
        // libdbus holds a reference to us until the connection is finalized (close() or loss of the bus).
        let context = Unmanaged.passRetained(self).toOpaque()
        dbus_connection_add_filter(
            pointer,
            { _, message, data in
                guard let message, let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
                let connection = Unmanaged<DBusConnection>.fromOpaque(data).takeUnretainedValue()
                return connection.filter(DBusMessage(retaining: message))
            }, context,
            { data in
                guard let data else { return }
                Unmanaged<DBusConnection>.fromOpaque(data).release()
            })
    }

    static func message(of error: CDBus.DBusError) -> String {
        guard let text = error.message else { return "unknown error" }
        return String(cString: text)
    }

    /// Whether the connection is still open.
    public var isConnected: Bool { state.withLock { $0.isConnected } }

    /// Calls `handler` once when the bus connection is lost (not on ``close()``).
    public func onDisconnect(_ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.disconnectHandlers.append(handler) }
    }

    /// Closes the connection after every message queued before this call has been written.
    public func close() async {
        guard
            state.withLock({ state in
                defer {
                    state.isConnected = false
                    state.disconnectHandlers = []
                }
                return state.isConnected
            })
        else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            shutDown { continuation.resume() }
        }
    }

    /// Flushes, closes and releases the libdbus connection, then stops the loop thread if it is its own.
    private func shutDown(then done: @escaping @Sendable () -> Void) {
        let release: DBusEventLoop.Job = { [self] in
            guard !released else { return done() }
            released = true
            flush(within: Self.closingFlushLimit)
            dbus_connection_close(pointer)
            loop.detach(pointer)
            dbus_connection_unref(pointer)
            done()
        }
        if ownsLoop {
            loop.stop(then: release, alreadyStopped: done)
        } else {
            submit(release, abandoned: done)
        }
    }

    /// How long closing waits for the bus to take what is queued. libdbus's own flush waits as long as the bus
    /// does, and a bus that reads nothing (hung, stopped) would hold the loop thread, and every connection on it.
    static let closingFlushLimit: Duration = .seconds(2)

    /// Writes the queued messages until none is left, the connection is lost or `limit` has passed.
    private func flush(within limit: Duration) {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while dbus_connection_get_is_connected(pointer) != 0, dbus_connection_has_messages_to_send(pointer) != 0 {
            let left = clock.now.duration(to: deadline)
            guard left > .zero else { return }
            let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
            _ = dbus_connection_read_write(pointer, Int32(min(max(milliseconds, 1), 100)))
        }
    }

    /// Runs `job` on the loop thread unless the libdbus connection has been released by then; then (or if
    /// the loop has stopped) `abandoned` runs instead.
    func submit(_ job: @escaping DBusEventLoop.Job, abandoned: DBusEventLoop.Job? = nil) {
        loop.submit(
            { [self] in
                if released { abandoned?() } else { job() }
            }, abandoned: abandoned)
    }

    /// Runs `body` on the connection thread and returns its result.
    func onLoop<T: Sendable>(_ body: @escaping @Sendable () throws(DBusError) -> T) async throws(DBusError) -> T {
        guard isConnected else { throw .disconnected }
        let result: Result<T, DBusError> = await withCheckedContinuation { continuation in
            submit(
                {
                    do throws(DBusError) {
                        continuation.resume(returning: .success(try body()))
                    } catch {
                        continuation.resume(returning: .failure(error))
                    }
                }, abandoned: { continuation.resume(returning: .failure(.disconnected)) })
        }
        return try result.get()
    }

    /// Runs `body` on the connection thread and returns once it has called its completion (which it may
    /// keep and call later, on the loop thread).
    func onLoopAsync(_ body: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) async throws(DBusError) {
        guard isConnected else { throw .disconnected }
        let completed: Bool = await withCheckedContinuation { continuation in
            submit(
                { body { continuation.resume(returning: true) } },
                abandoned: { continuation.resume(returning: false) })
        }
        guard completed else { throw .disconnected }
    }

    /// Calls `handler` for every message this connection refuses: a signal sent to it directly, a signal
    /// from someone other than the sender its subscription names, a method call its policy denies.
    ///
    /// The handler runs on the connection's thread, may be called at a hostile rate, and must not block.
    public func onRefusal(_ handler: @escaping @Sendable (DBusRefusal) -> Void) {
        state.withLock { $0.refusalHandlers.append(handler) }
    }

    /// Tells the refusal handlers; loop thread only.
    func refused(_ message: DBusMessage, _ reason: DBusRefusal.Reason) {
        let handlers = state.withLock { $0.refusalHandlers }
        guard !handlers.isEmpty else { return }
        let refusal = DBusRefusal(
            reason: reason, sender: message.sender, path: message.path, interface: message.interface, member: message.member)
        for handler in handlers { handler(refusal) }
    }

    /// Queues `message` for sending; on the loop thread only.
    func send(_ message: DBusMessage) throws(DBusError) {
        guard dbus_connection_send(pointer, message.pointer, nil) != 0 else {
            throw .invalidArgument("out of memory sending a message")
        }
    }

    /// Every incoming message passes here, on the loop thread.
    private func filter(_ message: DBusMessage) -> DBusHandlerResult {
        if message.isSignal {
            if message.interface == "org.freedesktop.DBus.Local", message.member == "Disconnected" {
                connectionLost()
                return DBUS_HANDLER_RESULT_HANDLED
            }
            deliverSignal(message)
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        }
        if message.isMethodCall {
            dispatchMethodCall(message)
            return DBUS_HANDLER_RESULT_HANDLED
        }
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    }

    private func connectionLost() {
        let (wasConnected, handlers) = state.withLock { state in
            defer {
                state.isConnected = false
                state.disconnectHandlers = []
            }
            return (state.isConnected, state.disconnectHandlers)
        }
        guard wasConnected else { return }
        for handler in handlers { handler() }
        shutDown {}
    }
}
