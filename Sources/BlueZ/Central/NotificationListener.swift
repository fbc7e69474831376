import Bluetooth
import DBus
import Synchronization

/// Subscribes to a connected device's notifying characteristics and keeps what they send, with times.
///
/// Each characteristic is acquired first (`AcquireNotify`: a socket carrying every notification as one
/// packet, nothing merged) and subscribed with `StartNotify` when that is refused (another client holds a
/// subscription, or BlueZ has no AcquireNotify for it); values then arrive as `PropertiesChanged("Value")`,
/// accepted from bluetoothd (the owner of `org.bluez`) only. Nothing here runs long on the bus thread:
/// signal and socket handlers append to a bounded list.
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
    private let signals: SubscriptionSet
    private let state = Locked(State())
    private let sockets = Mutex<[AcquiredSocket]>([])

    struct State: Sendable {
        var subscriptions: [Subscription] = []
        var received: [Received] = []
        var dropped = 0
        /// Characteristics whose values are taken from `PropertiesChanged`.
        var viaSignals: Set<DBusObjectPath> = []
    }

    private init(connection: DBusConnection) {
        self.connection = connection
        signals = SubscriptionSet(connection)
    }

    /// Subscribes to each of `characteristics` that can notify or indicate, on the device at `device`.
    public static func start(
        _ characteristics: [RemoteGattTable.Characteristic], device: DBusObjectPath, stack: BlueZStack, preferAcquire: Bool = true
    ) async throws(CentralError) -> NotificationListener {
        let listener = NotificationListener(connection: stack.connection)
        let state = listener.state
        try await listener.signals.add(SubscriptionSet.propertiesChanged(below: device, interface: BlueZNames.gattCharacteristic)) {
            signal in
            guard let (changed, _) = signal.changedProperties, let value = changed["Value"]?.bytes else { return }
            let at = ContinuousClock.now
            state.withLock { state in
                guard state.viaSignals.contains(signal.path) else { return }
                Self.keep(&state, Received(path: signal.path, value: Array(value.prefix(ATTMTU.maximumValueLength)), at: at))
            }
        }
        for characteristic in characteristics where !characteristic.properties.isDisjoint(with: [.notify, .indicate]) {
            await listener.subscribe(characteristic, preferAcquire: preferAcquire)
        }
        return listener
    }

    private static func keep(_ state: inout State, _ received: Received) {
        if state.received.count < maximumNotifications { state.received.append(received) } else { state.dropped += 1 }
    }

    private func subscribe(_ characteristic: RemoteGattTable.Characteristic, preferAcquire: Bool) async {
        let path = characteristic.path
        var lastError: RemoteGattError?
        // The device may notify as soon as BlueZ has subscribed, before the call is answered: the subscription
        // counts from when it was asked for, so that nothing it brought seems to come before it.
        var asked = ContinuousClock.now
        if preferAcquire {
            do {
                let reply = try await connection.call(
                    destination: BlueZNames.service, path: path, interface: BlueZNames.gattCharacteristic, member: "AcquireNotify",
                    arguments: [.stringVariantDictionary([:])], timeout: .seconds(10))
                let mtu = reply.dropFirst().first?.integer.flatMap { UInt16(exactly: $0) } ?? ATTMTU.minimum.rawValue
                let state = self.state
                if let descriptor = reply.first?.unixFD,
                    let socket = AcquiredSocket.adopting(
                        descriptor, mtu: mtu, loop: connection.loop,
                        onPacket: { packet in
                            let at = ContinuousClock.now
                            state.withLock {
                                Self.keep(&$0, Received(path: path, value: Array(packet.prefix(ATTMTU.maximumValueLength)), at: at))
                            }
                        }, onClose: {})
                {
                    sockets.withLock { $0.append(socket) }
                    state.withLock { $0.subscriptions.append(Subscription(path: path, method: .acquireNotify, at: asked)) }
                    return
                }
                lastError = RemoteGattError(.unexpectedMessage("AcquireNotify answered without a socket"))
            } catch {
                lastError = RemoteGattError(error)
            }
            // A refusal that says the device wants security first holds for StartNotify too.
            if let lastError, lastError.asksForSecurity {
                state.withLock { $0.subscriptions.append(Subscription(path: path, method: nil, at: asked, error: lastError)) }
                return
            }
        }
        state.withLock { _ = $0.viaSignals.insert(path) }
        asked = .now
        do {
            _ = try await connection.call(
                destination: BlueZNames.service, path: path, interface: BlueZNames.gattCharacteristic, member: "StartNotify",
                timeout: .seconds(10))
            state.withLock { $0.subscriptions.append(Subscription(path: path, method: .startNotify, at: asked)) }
        } catch {
            let failure = RemoteGattError(error)
            state.withLock { state in
                state.viaSignals.remove(path)
                state.subscriptions.append(Subscription(path: path, method: nil, at: asked, error: failure))
            }
        }
    }

    public var subscriptions: [Subscription] { state.value.subscriptions }
    public var received: [Received] { state.value.received }
    /// Notifications past ``maximumNotifications``.
    public var dropped: Int { state.value.dropped }

    /// Unsubscribes (`StopNotify`, closing the acquired sockets) and stops listening; what arrived stays.
    public func stop() async {
        let started = state.withLock { state in
            defer { state.viaSignals = [] }
            return state.subscriptions.filter { $0.method == .startNotify }
        }
        for subscription in started {
            _ = try? await connection.call(
                destination: BlueZNames.service, path: subscription.path, interface: BlueZNames.gattCharacteristic, member: "StopNotify",
                timeout: .seconds(5))
        }
        let open = sockets.withLock { sockets in
            defer { sockets = [] }
            return sockets
        }
        open.forEach { $0.close() }
        await signals.cancel()
    }
}
