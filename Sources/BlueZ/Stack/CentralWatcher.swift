import Bluetooth
import DBus
import Synchronization

/// A central connecting to or leaving an adapter.
public enum CentralEvent: Sendable, Equatable {
    case connected(address: BluetoothAddress)
    case disconnected(address: BluetoothAddress)
    /// Pairing with the central completed (`Device1.Paired` became true).
    case paired(address: BluetoothAddress)
}

/// Follows `org.bluez.Device1` objects of one adapter and reports when centrals connect, disconnect and pair.
///
/// Keep the returned watcher alive; ``cancel()`` stops it.
public final class CentralWatcher: Sendable {
    private let subscriptions: Mutex<[DBusSignalSubscription]>
    private let connected: Locked<Set<BluetoothAddress>>

    /// The addresses of the centrals connected now.
    public var connectedCentrals: [BluetoothAddress] { connected.value.sorted() }

    /// Starts watching `adapter`; `handler` runs on the bus thread, in order, and must not block.
    public static func watch(adapter: Adapter, stack: BlueZStack, handler: @escaping @Sendable (CentralEvent) -> Void)
        async throws(BlueZError) -> CentralWatcher
    {
        let connected = Locked<Set<BluetoothAddress>>([])
        let update: @Sendable (DBusObjectPath, Bool) -> Void = { path, isConnected in
            guard let address = BlueZDevicePath.address(of: path, on: adapter.path) else { return }
            let changed = connected.withLock { set in
                isConnected ? set.insert(address).inserted : set.remove(address) != nil
            }
            if changed { handler(isConnected ? .connected(address: address) : .disconnected(address: address)) }
        }
        let connection = stack.connection
        // The three match rules are independent: added at once, one round trip instead of three. The
        // connected devices are listed once all three are in place, so no connection falls in between.
        async let connections = Self.subscription(
            connection,
            DBusMatchRule(
                sender: BlueZNames.service, pathNamespace: adapter.path, interface: BlueZNames.properties, member: "PropertiesChanged",
                arg0: BlueZNames.device)
        ) { signal in
            guard let changed = signal.arguments.dropFirst().first?.stringKeyedDictionary else { return }
            if changed["Paired"]?.boolean == true, let address = BlueZDevicePath.address(of: signal.path, on: adapter.path) {
                handler(.paired(address: address))
            }
            if let isConnected = changed["Connected"]?.boolean { update(signal.path, isConnected) }
        }
        async let additions = Self.subscription(
            connection,
            DBusMatchRule(
                sender: BlueZNames.service, interface: BlueZNames.objectManager, member: "InterfacesAdded")
        ) { signal in
            guard let path = signal.arguments.first?.objectPath, path.isDescendant(of: adapter.path),
                case .dictionary(_, _, let interfaces)? = signal.arguments.dropFirst().first
            else { return }
            for entry in interfaces where entry.key.string == BlueZNames.device {
                if entry.value.stringKeyedDictionary?["Connected"]?.boolean == true { update(path, true) }
            }
        }
        async let removals = Self.subscription(
            connection,
            DBusMatchRule(
                sender: BlueZNames.service, interface: BlueZNames.objectManager, member: "InterfacesRemoved")
        ) { signal in
            guard let path = signal.arguments.first?.objectPath, path.isDescendant(of: adapter.path),
                signal.arguments.dropFirst().first?.arrayElements?.contains(.string(BlueZNames.device)) == true
            else { return }
            update(path, false)
        }
        let results = await [connections, additions, removals]
        let subscriptions = results.compactMap { try? $0.get() }
        do {
            for result in results { _ = try result.get() }
            for (path, interfaces) in try await stack.managedObjects() where path.isDescendant(of: adapter.path) {
                if interfaces[BlueZNames.device]?["Connected"]?.boolean == true { update(path, true) }
            }
        } catch let error as BlueZError {
            for subscription in subscriptions { await subscription.cancel() }
            throw error
        } catch {
            for subscription in subscriptions { await subscription.cancel() }
            throw .call("cannot watch centrals", error as? DBusError ?? .disconnected)
        }
        return CentralWatcher(subscriptions: subscriptions, connected: connected)
    }

    /// Subscribes to `rule`, the outcome as a value (for `async let`).
    private static func subscription(
        _ connection: DBusConnection, _ rule: DBusMatchRule, handler: @escaping @Sendable (DBusSignal) -> Void
    ) async -> Result<DBusSignalSubscription, DBusError> {
        do {
            return .success(try await connection.subscribe(to: rule, handler: handler))
        } catch {
            return .failure(error)
        }
    }

    private init(subscriptions: [DBusSignalSubscription], connected: Locked<Set<BluetoothAddress>>) {
        self.subscriptions = Mutex(subscriptions)
        self.connected = connected
    }

    public func cancel() async {
        let all = subscriptions.withLock { subscriptions in
            defer { subscriptions = [] }
            return subscriptions
        }
        for subscription in all { await subscription.cancel() }
    }
}
