import Bluetooth
import DBus
import Synchronization

/// gattemu's connection to bluetoothd: the bus, who owns `org.bluez` now, and its adapters.
///
/// Who owns `org.bluez` is followed from the bus's own `NameOwnerChanged` signals only, and every signal
/// subscribed to from `org.bluez` is accepted only from that owner (see ``DBusConnection/subscribe(to:handler:)``);
/// only that owner may call objects exported with ``callerPolicy``.
public final class BlueZStack: Sendable {
    public let connection: DBusConnection
    private let ownerHandlers = Mutex<[@Sendable (String?) -> Void]>([])

    /// Connects to `bus` (served by `loop`, or a loop of its own) and starts following the owner of
    /// `org.bluez`; fails when bluetoothd is not there.
    public static func connect(
        bus: DBusBus = .system, on loop: DBusEventLoop? = nil, requireBluetoothd: Bool = true
    ) async throws(BlueZError) -> BlueZStack {
        let connection: DBusConnection
        do {
            connection = try await DBusConnection.connect(to: bus, on: loop)
        } catch {
            throw .busUnavailable(error.description)
        }
        let stack = BlueZStack(connection: connection)
        do {
            try await connection.watchNameOwner(BlueZNames.service) { [weak stack] owner in
                stack?.ownerChanged(owner)
            }
        } catch {
            await connection.close()
            throw .busUnavailable(error.description)
        }
        if requireBluetoothd, stack.bluetoothdName == nil {
            await connection.close()
            throw .bluetoothdNotRunning
        }
        return stack
    }

    private init(connection: DBusConnection) {
        self.connection = connection
    }

    private func ownerChanged(_ name: String?) {
        for handler in ownerHandlers.withLock({ $0 }) { handler(name) }
    }

    /// The unique bus name of the running bluetoothd, or nil while it is gone.
    public var bluetoothdName: String? { connection.currentOwner(of: BlueZNames.service) }

    /// Calls `handler` whenever bluetoothd appears (its unique name) or disappears (nil).
    public func onBluetoothdChange(_ handler: @escaping @Sendable (String?) -> Void) {
        ownerHandlers.withLock { $0.append(handler) }
    }

    /// Admits only the current owner of `org.bluez`.
    public var callerPolicy: DBusCallerPolicy {
        DBusCallerPolicy { [weak self] sender in
            guard let self, let sender, let bluetoothd = bluetoothdName else { return false }
            return sender == bluetoothd
        }
    }

    /// Every object bluetoothd exports, with interfaces and properties.
    func managedObjects() async throws(BlueZError) -> [DBusObjectPath: [String: [String: DBusValue]]] {
        let reply: [DBusValue]
        do {
            reply = try await connection.call(
                destination: BlueZNames.service, path: .root, interface: BlueZNames.objectManager, member: "GetManagedObjects")
        } catch  where error.name == DBusError.Name.serviceUnknown || error.name == DBusError.Name.nameHasNoOwner {
            throw .bluetoothdNotRunning
        } catch {
            throw .call("cannot list bluetoothd's objects", error)
        }
        return reply.first?.managedObjects ?? [:]
    }

    /// The adapters bluetoothd knows, sorted by name.
    public func adapters() async throws(BlueZError) -> [Adapter] {
        try await managedObjects().compactMap { path, interfaces in
            interfaces[BlueZNames.adapter].map {
                Adapter(stack: self, path: path, adapterProperties: $0, advertisingProperties: interfaces[BlueZNames.advertisingManager])
            }
        }.sorted { $0.name < $1.name }
    }

    /// The adapter named `hciN` or with address `wanted`; the first one when `wanted` is nil.
    public func adapter(_ wanted: String?) async throws(BlueZError) -> Adapter {
        let all = try await adapters()
        guard let wanted else {
            guard let first = all.first else { throw .adapterNotFound("(any)", available: []) }
            return first
        }
        guard let match = all.first(where: { $0.name == wanted || $0.address == BluetoothAddress(wanted) }) else {
            throw .adapterNotFound(wanted, available: all.map(\.name))
        }
        return match
    }

    /// Closes the bus connection.
    public func close() async {
        await connection.close()
    }
}
