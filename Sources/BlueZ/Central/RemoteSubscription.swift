import Bluetooth
import DBus
import Synchronization

/// One subscription to a remote characteristic's notifications or indications, handing each value to a
/// handler as it arrives, in order: the one way the central side subscribes (the relay's link and the clone's
/// ``NotificationListener`` both use it).
///
/// `AcquireNotify` first (each notification one packet on a socket); `StartNotify` when BlueZ refuses that (an
/// indicate-only characteristic, another client subscribed), the values then coming as `PropertiesChanged("Value")`
/// from bluetoothd only. The handler runs on the connection's loop thread and must not block.
public final class RemoteSubscription: Sendable {
    public let path: DBusObjectPath
    public let method: NotificationListener.Method
    private let connection: DBusConnection
    private let signals: SubscriptionSet
    private let socket: Mutex<AcquiredSocket?>

    private init(
        path: DBusObjectPath, method: NotificationListener.Method, connection: DBusConnection, signals: SubscriptionSet,
        socket: AcquiredSocket?
    ) {
        self.path = path
        self.method = method
        self.connection = connection
        self.signals = signals
        self.socket = Mutex(socket)
    }

    /// Subscribes to the characteristic at `path`; `handler` gets each value (at most 512 bytes), `onClose` runs
    /// when bluetoothd closes an acquired socket (the link went down or the subscription ended). Each call to
    /// bluetoothd waits `timeout` at most. A refusal of `AcquireNotify` that asks for security is thrown as it is
    /// (`StartNotify` would be refused the same way).
    public static func start(
        _ path: DBusObjectPath, connection: DBusConnection, preferAcquire: Bool = true, timeout: Duration = .seconds(30),
        handler: @escaping @Sendable ([UInt8]) -> Void, onClose: @escaping @Sendable () -> Void = {}
    ) async throws(RemoteGattError) -> RemoteSubscription {
        var lastError: RemoteGattError?
        if preferAcquire {
            do {
                let reply = try await connection.call(
                    destination: BlueZNames.service, path: path, interface: BlueZNames.gattCharacteristic, member: "AcquireNotify",
                    arguments: [.stringVariantDictionary([:])], timeout: timeout)
                let mtu = reply.dropFirst().first?.integer.flatMap { UInt16(exactly: $0) } ?? ATTMTU.minimum.rawValue
                if let descriptor = reply.first?.unixFD,
                    let socket = AcquiredSocket.adopting(
                        descriptor, mtu: mtu, loop: connection.loop,
                        onPacket: { handler(Array($0.prefix(ATTMTU.maximumValueLength))) }, onClose: onClose)
                {
                    return RemoteSubscription(
                        path: path, method: .acquireNotify, connection: connection, signals: SubscriptionSet(connection), socket: socket)
                }
                lastError = RemoteGattError(.unexpectedMessage("AcquireNotify answered without a socket"))
            } catch {
                lastError = RemoteGattError(error)
            }
            if let lastError, lastError.asksForSecurity { throw lastError }
        }
        let signals = SubscriptionSet(connection)
        do throws(CentralError) {
            try await signals.add(SubscriptionSet.propertiesChanged(below: path, interface: BlueZNames.gattCharacteristic)) { signal in
                guard signal.path == path, let (changed, _) = signal.changedProperties, let value = changed["Value"]?.bytes else { return }
                handler(Array(value.prefix(ATTMTU.maximumValueLength)))
            }
        } catch {
            throw RemoteGattError(.unexpectedMessage(error.description))
        }
        do {
            _ = try await connection.call(
                destination: BlueZNames.service, path: path, interface: BlueZNames.gattCharacteristic, member: "StartNotify",
                timeout: timeout)
        } catch {
            await signals.cancel()
            throw RemoteGattError(error)
        }
        return RemoteSubscription(path: path, method: .startNotify, connection: connection, signals: signals, socket: nil)
    }

    /// Unsubscribes: closes the socket, or `StopNotify`; errors are ignored (the device may be gone).
    public func stop() async {
        let open = socket.withLock { socket in
            defer { socket = nil }
            return socket
        }
        open?.close()
        if method == .startNotify {
            _ = try? await connection.call(
                destination: BlueZNames.service, path: path, interface: BlueZNames.gattCharacteristic, member: "StopNotify",
                timeout: .seconds(5))
        }
        await signals.cancel()
    }
}
