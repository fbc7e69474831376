import DBus
import DBusTestSupport

/// One adapter of a ``StandInBluetoothd``: `Adapter1` (with discovery), `GattManager1`, `LEAdvertisingManager1`,
/// and the remote peripherals it can discover and connect to.
public final class StandInAdapter: Sendable {
    public typealias Names = StandInBluetoothd.Names

    public let name: String
    public let address: String
    public let path: DBusObjectPath
    let connection: DBusConnection
    let configuration: StandInBluetoothd.Configuration
    let registry: Registry
    let state = Locked(State())
    /// Apart from `state`, so that devices can read it without holding the adapter.
    let discovering = Locked(false)

    struct State: Sendable {
        var alias = "host"
        var powered = true
        var filters: [[String: DBusValue]] = []
        var removed: [DBusObjectPath] = []
        var devices: [StandInDevice] = []
        var discoverySessions = 0
    }

    init(connection: DBusConnection, configuration: StandInBluetoothd.Configuration, registry: Registry, name: String, address: String) {
        self.connection = connection
        self.configuration = configuration
        self.registry = registry
        self.name = name
        self.address = address
        path = DBusObjectPath("/org/bluez/\(name)")
    }

    /// The adapter's alias (the GAP name a peripheral on it shows).
    public var alias: String { state.value.alias }
    public var isDiscovering: Bool { discovering.value }
    /// Every `SetDiscoveryFilter` it got.
    public var discoveryFilters: [[String: DBusValue]] { state.value.filters }
    /// The devices `RemoveDevice` removed.
    public var removedDevices: [DBusObjectPath] { state.value.removed }
    public var devices: [StandInDevice] { state.value.devices }

    func interfaces() -> [DBusInterface] {
        let state = self.state
        var adapterProperties: [DBusProperty] = [
            .constant("Address", .string(address)),
            .constant("AddressType", .string("public")),
            .constant("Name", .string(name)),
            DBusProperty(
                "Alias", signature: .string, get: { .string(state.value.alias) },
                set: { value in
                    state.withLock { $0.alias = value.string ?? "" }
                }),
            DBusProperty(
                "Powered", signature: .boolean, get: { .boolean(state.value.powered) },
                set: { [connection, path] value in
                    let powered = value.boolean ?? false
                    state.withLock { $0.powered = powered }
                    // As bluetoothd: PropertiesChanged follows the change (clients learn of it from the signal).
                    Task {
                        try? await connection.emitPropertiesChanged(
                            path: path, interface: Names.adapter, changed: ["Powered": .boolean(powered)])
                    }
                }),
            DBusProperty("Discovering", signature: .boolean, get: { [discovering] in .boolean(discovering.value) }),
        ]
        if configuration.newerBlueZ {
            adapterProperties += [.constant("Manufacturer", .uint16(1521)), .constant("Version", .byte(9))]
        }
        let path = self.path
        let registry = self.registry
        return [
            DBusInterface(
                name: Names.adapter,
                methods: [
                    DBusMethod("SetDiscoveryFilter", input: "a{sv}") { call in
                        let filter = try call.arguments.first?.stringKeyedDictionary ?? [:]
                        state.withLock { $0.filters.append(filter) }
                        return []
                    },
                    DBusMethod("StartDiscovery") { [weak self] _ in
                        try await self?.startDiscovery()
                        return []
                    },
                    DBusMethod("StopDiscovery") { [weak self] _ in
                        try await self?.stopDiscovery()
                        return []
                    },
                    DBusMethod("RemoveDevice", input: "o") { [weak self] call in
                        guard let device = try call.arguments.first?.objectPath else { return [] }
                        try await self?.removeDevice(device)
                        return []
                    },
                ], properties: adapterProperties),
            Self.manager(
                Names.gattManager, .application, "RegisterApplication", "UnregisterApplication", registry: registry, adapter: path),
            Self.manager(
                Names.advertisingManager, .advertisement, "RegisterAdvertisement", "UnregisterAdvertisement", registry: registry,
                adapter: path,
                properties: [
                    .constant("SupportedInstances", .byte(4)),
                    .constant("ActiveInstances", .byte(0)),
                    .constant("SupportedIncludes", .strings(["tx-power", "appearance", "local-name"])),
                    // A Bluetooth 5 controller's, as bluetoothd 5.82 reports a btvirt one's.
                    .constant("SupportedSecondaryChannels", .strings(["1M", "2M", "Coded"])),
                    .constant("SupportedFeatures", .strings(["CanSetTxPower"])),
                    .constant(
                        "SupportedCapabilities",
                        .dictionary(
                            key: .string, value: .variant,
                            [
                                DBusDictionaryEntry(key: .string("MinTxPower"), value: .variant(.int16(-127))),
                                DBusDictionaryEntry(key: .string("MaxTxPower"), value: .variant(.int16(20))),
                                DBusDictionaryEntry(key: .string("MaxAdvLen"), value: .variant(.byte(251))),
                                DBusDictionaryEntry(key: .string("MaxScnRspLen"), value: .variant(.byte(251))),
                            ])),
                ]),
        ]
    }

    /// `GattManager1` or `LEAdvertisingManager1`: registrations recorded in the registry, answered as bluetoothd does.
    private static func manager(
        _ name: String, _ kind: Registry.RegistrationCall.Kind, _ register: String, _ unregister: String, registry: Registry,
        adapter: DBusObjectPath, properties: [DBusProperty] = []
    ) -> DBusInterface {
        DBusInterface(
            name: name,
            methods: [
                DBusMethod(register, input: "oa{sv}") { call in
                    try await registry.register(kind, call, adapter: adapter)
                    return []
                },
                DBusMethod(unregister, input: "o") { call in
                    try registry.unregister(kind, call)
                    return []
                },
            ], properties: properties)
    }

    // MARK: The central side

    /// Adds a remote peripheral this adapter can discover (and, with ``RemotePeripheral/cached``, knows
    /// already: exported at once, with the stale properties, as BlueZ keeps devices seen before).
    @discardableResult
    public func addDevice(_ peripheral: RemotePeripheral) async throws -> StandInDevice {
        let device = StandInDevice(
            peripheral: peripheral, adapterPath: path, connection: connection, newerBlueZ: configuration.newerBlueZ,
            discovering: discovering)
        state.withLock { $0.devices.append(device) }
        if peripheral.cached { try await device.export(cached: true) }
        if discovering.value { device.heard() }
        return device
    }

    /// The device with `address`.
    public func device(_ address: String) -> StandInDevice? {
        state.value.devices.first { $0.peripheral.address.uppercased() == address.uppercased() }
    }

    func startDiscovery() async throws {
        guard state.value.powered else { throw DBusError.named("org.bluez.Error.NotReady", message: "Resource Not Ready") }
        state.withLock { $0.discoverySessions += 1 }
        let first = discovering.withLock { discovering in
            defer { discovering = true }
            return !discovering
        }
        if first {
            try? await connection.emitPropertiesChanged(path: path, interface: Names.adapter, changed: ["Discovering": .boolean(true)])
        }
        for device in state.value.devices { device.heard() }
    }

    func stopDiscovery() async throws {
        let was = discovering.withLock { discovering in
            defer { discovering = false }
            return discovering
        }
        guard was else { throw DBusError.named("org.bluez.Error.Failed", message: "No discovery started") }
        try? await connection.emitPropertiesChanged(path: path, interface: Names.adapter, changed: ["Discovering": .boolean(false)])
        for device in state.value.devices { await device.discoveryStopped() }
    }

    func removeDevice(_ device: DBusObjectPath) async throws {
        guard let target = state.value.devices.first(where: { $0.path == device }), target.isExported else {
            throw DBusError.named("org.bluez.Error.DoesNotExist", message: "Does Not Exist")
        }
        state.withLock { $0.removed.append(device) }
        await target.remove()
    }

    func removeAllDevices() async {
        for device in state.value.devices { await device.remove() }
    }

    func stopTimers() async {
        for device in state.value.devices { device.cancelTimers() }
    }
}
