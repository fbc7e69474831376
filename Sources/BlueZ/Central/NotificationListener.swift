import Bluetooth
import DBus

/// Subscribes to a connected device's notifying characteristics and keeps what they send, with times.
///
/// Each characteristic is subscribed with ``RemoteSubscription`` (acquired first: a socket carrying every
/// notification as one packet, nothing merged; `StartNotify` when that is refused, values then arriving as
/// `PropertiesChanged("Value")` from bluetoothd only). Nothing here runs long on the bus thread: the handlers
/// append to a bounded list.
public final class NotificationListener: Sendable {
    public enum Method: String, Sendable {
        case acquireNotify = "AcquireNotify"
        case startNotify = "StartNotify"
    }

    /// One subscription attempt.
    public struct Subscription: Sendable, Equatable {
        public var path: DBusObjectPath
        /// How it succeeded; nil when both ways failed.
        public var method: Method?
        public var at: ContinuousClock.Instant
        /// Why it failed (the last error).
        public var error: RemoteGattError?
    }

    /// One notification or indication.
    public struct Received: Sendable, Equatable {
        public var path: DBusObjectPath
        public var value: [UInt8]
        public var at: ContinuousClock.Instant
    }

    /// At most this many notifications are kept; later ones are counted only.
    public static let maximumNotifications = 10_000

    private let connection: DBusConnection
    private let state = Locked(State())

    struct State: Sendable {
        var subscriptions: [Subscription] = []
        var received: [Received] = []
        var dropped = 0
        /// The subscriptions made, to end at ``stop()``.
        var open: [RemoteSubscription] = []
        /// Stopped: what still arrives is not kept.
        var stopped = false
    }

    private init(connection: DBusConnection) {
        self.connection = connection
    }

    /// Subscribes to each of `characteristics` that can notify or indicate, on the device at `device`
    /// (``RemoteSubscription``, 10 s for each of bluetoothd's answers).
    public static func start(
        _ characteristics: [RemoteGattTable.Characteristic], device: DBusObjectPath, stack: BlueZStack, preferAcquire: Bool = true
    ) async throws(CentralError) -> NotificationListener {
        let listener = NotificationListener(connection: stack.connection)
        for characteristic in characteristics where !characteristic.properties.isDisjoint(with: [.notify, .indicate]) {
            await listener.subscribe(characteristic.path, preferAcquire: preferAcquire)
        }
        return listener
    }

    private func subscribe(_ path: DBusObjectPath, preferAcquire: Bool) async {
        // The device may notify as soon as BlueZ has subscribed, before the call is answered: the subscription
        // counts from when it was asked for, so that nothing it brought seems to come before it.
        let asked = ContinuousClock.now
        let state = self.state
        do {
            let subscription = try await RemoteSubscription.start(
                path, connection: connection, preferAcquire: preferAcquire, timeout: .seconds(10)
            ) { value in
                let at = ContinuousClock.now
                state.withLock { state in
                    guard !state.stopped else { return }
                    if state.received.count < Self.maximumNotifications {
                        state.received.append(Received(path: path, value: value, at: at))
                    } else {
                        state.dropped += 1
                    }
                }
            }
            state.withLock { state in
                state.open.append(subscription)
                state.subscriptions.append(Subscription(path: path, method: subscription.method, at: asked))
            }
        } catch {
            state.withLock { $0.subscriptions.append(Subscription(path: path, method: nil, at: asked, error: error)) }
        }
    }

    public var subscriptions: [Subscription] { state.value.subscriptions }
    public var received: [Received] { state.value.received }
    /// Notifications past ``maximumNotifications``.
    public var dropped: Int { state.value.dropped }

    /// Unsubscribes (`StopNotify`, closing the acquired sockets) and stops listening; what arrived stays.
    public func stop() async {
        let open = state.withLock { state in
            state.stopped = true
            defer { state.open = [] }
            return state.open
        }
        for subscription in open { await subscription.stop() }
    }
}
