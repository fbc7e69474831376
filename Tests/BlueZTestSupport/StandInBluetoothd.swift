import DBus
import DBusTestSupport

/// Stands in for bluetoothd on a private bus, for tests and the host benchmark.
///
/// It owns `org.bluez`, serves an object manager at `/` and exports adapters (``addAdapter(_:address:announce:)``)
/// with `Adapter1`, `GattManager1` and `LEAdvertisingManager1`. The peripheral side records who registered
/// which GATT application and advertisement (answering like bluetoothd: `AlreadyExists`, `DoesNotExist`) and
/// calls the application's objects as bluetoothd does (``readValue(_:_:options:)``, ``writeValue(_:_:_:options:withReply:)``,
/// ``acquireNotify(_:_:options:)``, with ``options(offset:mtu:device:)``). The central side serves remote
/// peripherals (``StandInAdapter/addDevice(_:)``): discovery, `Device1` with advertisement properties,
/// connecting, and their GATT tables (see ``RemotePeripheral``).
///
/// It names BlueZ's interfaces itself (``Names``), independently of the code under test. Stopping it
/// (``stop()``) is bluetoothd exiting; a new instance on the same bus is bluetoothd restarting (``restart()``).
public final class StandInBluetoothd: Sendable {
    /// What kind of bluetoothd to be.
    public struct Configuration: Sendable {
        /// Newer BlueZ: the adapter lists `Manufacturer` and `Version` (5.72 and later, which open one
        /// AcquireNotify socket per central), and remote GATT objects carry `Handle` and `MTU` (5.82). Without,
        /// it looks like BlueZ 5.66.
        public var newerBlueZ = false
        /// `RegisterAdvertisement` answers only after this long.
        public var advertisementDelay: Duration = .zero
        /// Read a registering application's objects (`GetManagedObjects`) before answering, as bluetoothd does.
        public var inspectsApplications = false

        public init(newerBlueZ: Bool = false, advertisementDelay: Duration = .zero, inspectsApplications: Bool = false) {
            self.newerBlueZ = newerBlueZ
            self.advertisementDelay = advertisementDelay
            self.inspectsApplications = inspectsApplications
        }
    }

    /// BlueZ's bus name and interfaces, as doc/*-api.txt names them.
    public enum Names {
        public static let service = "org.bluez"
        public static let adapter = "org.bluez.Adapter1"
        public static let device = "org.bluez.Device1"
        public static let gattManager = "org.bluez.GattManager1"
        public static let advertisingManager = "org.bluez.LEAdvertisingManager1"
        public static let gattService = "org.bluez.GattService1"
        public static let gattCharacteristic = "org.bluez.GattCharacteristic1"
        public static let gattDescriptor = "org.bluez.GattDescriptor1"
        public static let advertisement = "org.bluez.LEAdvertisement1"
        public static let agentManager = "org.bluez.AgentManager1"
        public static let agent = "org.bluez.Agent1"
        public static let objectManager = "org.freedesktop.DBus.ObjectManager"
        public static let properties = "org.freedesktop.DBus.Properties"
    }

    /// A GATT application or advertisement registered now.
    public struct Registration: Sendable, Equatable {
        /// The registrant's unique bus name.
        public var owner: String
        public var path: DBusObjectPath
        public var adapter: DBusObjectPath
        /// When the call arrived.
        public var at: ContinuousClock.Instant
        /// The application's objects, when ``Configuration/inspectsApplications`` (they are always read: an
        /// application without a service is refused with "No object received", as bluetoothd refuses it).
        public var objects: [DBusObjectPath: [String: [String: DBusValue]]]?
    }

    /// One registration call, for tests that count them.
    public struct RegistrationCall: Sendable, Equatable {
        public enum Kind: Sendable { case application, advertisement }
        public var kind: Kind
        public var register: Bool
        public var owner: String
        public var path: DBusObjectPath
        public var at: ContinuousClock.Instant
        /// The D-Bus error it was answered with, if any.
        public var error: String?
    }

    public let connection: DBusConnection
    /// The bus's address (the bus itself is not kept: the test owns it and stops it when done with it).
    public let busAddress: String
    public let configuration: Configuration
    let registry: Registry
    private let adapters = Locked<[StandInAdapter]>([])

    /// Connects to `bus`, serves the object manager and takes `org.bluez`.
    public convenience init(bus: PrivateBus, configuration: Configuration = Configuration()) async throws {
        try await self.init(address: bus.address, configuration: configuration)
    }

    init(address: String, configuration: Configuration) async throws {
        busAddress = address
        self.configuration = configuration
        connection = try await DBusConnection.connect(to: .address(address))
        registry = Registry(connection: connection, configuration: configuration)
        try await connection.exportObjectManager(at: "/")
        try await connection.export([registry.agentManager()], at: "/org/bluez")
        try await connection.requestName(Names.service)
    }

    /// A stand-in with one adapter, `hci0` (not announced), as most tests want it.
    public static func withAdapter(_ bus: PrivateBus, configuration: Configuration = Configuration()) async throws -> StandInBluetoothd {
        let bluetoothd = try await StandInBluetoothd(bus: bus, configuration: configuration)
        try await bluetoothd.addAdapter()
        return bluetoothd
    }

    /// This bluetoothd's unique bus name (what `org.bluez` resolves to).
    public var uniqueName: String { connection.uniqueName }

    // MARK: Adapters

    /// Exports a powered adapter `name` (`hci0`) with the GATT and advertising managers; `announce` also sends
    /// what bluetoothd sends once an adapter is up (InterfacesAdded with `Powered`, then `PropertiesChanged`).
    @discardableResult
    public func addAdapter(_ name: String = "hci0", address: String = "00:AA:01:01:00:01", announce: Bool = false) async throws
        -> StandInAdapter
    {
        let adapter = StandInAdapter(connection: connection, configuration: configuration, registry: registry, name: name, address: address)
        try await connection.export(adapter.interfaces(), at: adapter.path)
        adapters.withLock { $0.append(adapter) }
        if announce { try await announcePowered(adapter) }
        return adapter
    }

    /// The adapter named `name`.
    public func adapter(_ name: String = "hci0") -> StandInAdapter? {
        adapters.withLock { $0.first { $0.name == name } }
    }

    /// Sends InterfacesAdded for the adapter with `Powered`, then `PropertiesChanged(Powered)`.
    public func announcePowered(_ adapter: StandInAdapter) async throws {
        try await connection.emitSignal(
            path: "/", interface: Names.objectManager, member: "InterfacesAdded",
            arguments: [
                .objectPath(adapter.path),
                .dictionary(
                    key: .string, value: "a{sv}",
                    [
                        DBusDictionaryEntry(key: .string(Names.adapter), value: .stringVariantDictionary(["Powered": .boolean(true)]))
                    ]),
            ])
        try await connection.emitPropertiesChanged(path: adapter.path, interface: Names.adapter, changed: ["Powered": .boolean(true)])
    }

    /// Removes an adapter (InterfacesRemoved), as when it is unplugged: its GATT and advertising managers go with it,
    /// and every application and advertisement registered on it (bluetoothd frees them with the adapter).
    public func removeAdapter(_ adapter: StandInAdapter) async throws {
        await adapter.removeAllDevices()
        registry.state.withLock { state in
            state.applications.removeAll { $0.adapter == adapter.path }
            state.advertisements.removeAll { $0.adapter == adapter.path }
        }
        try await connection.unexport(adapter.path)
        adapters.withLock { $0.removeAll { $0 === adapter } }
    }

    // MARK: Registrations

    /// The GATT applications registered now.
    public var applications: [Registration] { registry.state.value.applications }
    /// The advertisements registered now.
    public var advertisements: [Registration] { registry.state.value.advertisements }
    /// Every registration call, in order.
    public var registrationCalls: [RegistrationCall] { registry.state.value.calls }

    /// Refuses the next `count` `RegisterApplication` calls with `org.bluez.Error.Failed`, as bluetoothd refuses
    /// an application it cannot add (a test of what the registrant does then).
    public func refuseApplications(_ count: Int = 1) {
        registry.state.withLock { $0.applicationRefusals = count }
    }
    /// Pairing agents registered now (`AgentManager1.RegisterAgent`).
    public var agents: [Agent] { registry.state.value.agents }
    /// The default agent (`RequestDefaultAgent`), while it is registered.
    public var defaultAgent: Agent? {
        let state = registry.state.value
        return state.agents.first { $0.owner == state.defaultAgent?.owner && $0.path == state.defaultAgent?.path }
    }

    /// A pairing agent as registered.
    public struct Agent: Sendable, Equatable {
        public var owner: String
        public var path: DBusObjectPath
        public var capability: String
    }

    /// Calls a method of the default agent as bluetoothd does while a central pairs, e.g.
    /// `askAgent("RequestConfirmation", [.objectPath(device), .uint32(123456)])`.
    public func askAgent(_ member: String, _ arguments: [DBusValue], timeout: Duration = .seconds(60)) async throws -> [DBusValue] {
        guard let agent = defaultAgent else { throw DBusError.named("org.bluez.Error.Failed", message: "no default agent") }
        return try await connection.call(
            destination: agent.owner, path: agent.path, interface: Names.agent, member: member,
            arguments: arguments, timeout: timeout)
    }

    // MARK: Calling the application as bluetoothd does

    /// Calls a method of another client's object.
    public func call(_ target: String, _ path: DBusObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = [])
        async throws -> [DBusValue]
    {
        try await connection.call(destination: target, path: path, interface: interface, member: member, arguments: arguments)
    }

    /// The options bluetoothd 5.66 sends with ReadValue, WriteValue and AcquireNotify: `device`, `link`,
    /// `mtu`, and `offset` when not 0; `type` (5.82's write type: `request`, `command`) when given.
    public static func options(
        offset: UInt16 = 0, mtu: UInt16 = 517, device: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_02_00_02", type: String? = nil
    ) -> DBusValue {
        var options: [String: DBusValue] = ["device": .objectPath(device), "link": .string("LE"), "mtu": .uint16(mtu)]
        if offset > 0 { options["offset"] = .uint16(offset) }
        if let type { options["type"] = .string(type) }
        return .stringVariantDictionary(options)
    }

    /// `ReadValue` on a characteristic (or a descriptor: `interface`) of `owner`'s application.
    public func readValue(
        _ owner: String, _ path: DBusObjectPath, interface: String = Names.gattCharacteristic, options: DBusValue = options()
    ) async throws -> [UInt8] {
        try await call(owner, path, interface, "ReadValue", [options]).first?.bytes ?? []
    }

    /// `WriteValue`; `withReply: false` sends it flagged no-reply, as bluetoothd does for write commands.
    public func writeValue(
        _ owner: String, _ path: DBusObjectPath, _ value: [UInt8], interface: String = Names.gattCharacteristic,
        options: DBusValue = options(), withReply: Bool = true
    ) async throws {
        if withReply {
            _ = try await call(owner, path, interface, "WriteValue", [.bytes(value), options])
        } else {
            try await connection.callWithoutReply(
                destination: owner, path: path, interface: interface, member: "WriteValue", arguments: [.bytes(value), options])
        }
    }

    /// `AcquireNotify`: bluetoothd's end of the notification socket and the MTU.
    public func acquireNotify(_ owner: String, _ path: DBusObjectPath, options: DBusValue = options()) async throws -> (
        socket: DBusFileDescriptor, mtu: UInt16
    ) {
        let reply = try await call(owner, path, Names.gattCharacteristic, "AcquireNotify", [options])
        guard let socket = reply.first?.unixFD, let mtu = reply.last?.integer.flatMap({ UInt16(exactly: $0) }) else {
            throw DBusError.unexpectedMessage("AcquireNotify answered \(reply)")
        }
        return (socket, mtu)
    }

    /// `StartNotify`.
    public func startNotify(_ owner: String, _ path: DBusObjectPath) async throws {
        _ = try await call(owner, path, Names.gattCharacteristic, "StartNotify")
    }

    /// The objects of `owner`'s object manager at `path`.
    public func managedObjects(_ owner: String, _ path: DBusObjectPath) async throws -> [DBusObjectPath: [String: [String: DBusValue]]] {
        try await registry.managedObjects(owner, path)
    }

    /// The path of the characteristic of `owner`'s application at `path` whose UUID ends with `suffix`.
    public func characteristicPath(_ owner: String, _ path: DBusObjectPath, uuidSuffix suffix: String) async throws -> DBusObjectPath {
        let objects = try await managedObjects(owner, path)
        guard let found = objects.first(where: { $0.value[Names.gattCharacteristic]?["UUID"]?.string?.hasSuffix(suffix) == true })?.key
        else { throw DBusError.unexpectedMessage("no characteristic with a UUID ending in \(suffix)") }
        return found
    }

    // MARK: Lifetime

    /// bluetoothd exits: `org.bluez` leaves the bus, its objects with it.
    public func stop() async {
        for adapter in adapters.value { await adapter.stopTimers() }
        await connection.close()
    }

    /// bluetoothd restarts: this one stops, a new one with the same configuration takes `org.bluez` and,
    /// when `withAdapters`, brings the same adapters back (announced).
    public func restart(withAdapters: Bool = true) async throws -> StandInBluetoothd {
        let names = adapters.value.map { ($0.name, $0.address) }
        await stop()
        let next = try await StandInBluetoothd(address: busAddress, configuration: configuration)
        if withAdapters {
            for (name, address) in names { try await next.addAdapter(name, address: address, announce: true) }
        }
        return next
    }
}

/// The registrations of one bluetoothd, shared by its adapters.
final class Registry: Sendable {
    typealias Registration = StandInBluetoothd.Registration
    typealias RegistrationCall = StandInBluetoothd.RegistrationCall
    let connection: DBusConnection
    let configuration: StandInBluetoothd.Configuration
    let state = Locked(State())

    struct State: Sendable {
        var applications: [Registration] = []
        var advertisements: [Registration] = []
        var calls: [RegistrationCall] = []
        var agents: [StandInBluetoothd.Agent] = []
        var defaultAgent: (owner: String, path: DBusObjectPath)?
        /// How many of the next application registrations to refuse (``StandInBluetoothd/refuseApplications(_:)``).
        var applicationRefusals = 0
    }

    init(connection: DBusConnection, configuration: StandInBluetoothd.Configuration) {
        self.connection = connection
        self.configuration = configuration
    }

    func register(_ kind: RegistrationCall.Kind, _ call: DBusMethodCall, adapter: DBusObjectPath) async throws {
        let owner = call.sender ?? ""
        let path = try call.arguments.first?.objectPath ?? "/"
        let at = ContinuousClock.now
        let exists = state.withLock { state in
            (kind == .application ? state.applications : state.advertisements).contains { $0.owner == owner && $0.path == path }
        }
        if exists {
            state.withLock {
                $0.calls.append(
                    RegistrationCall(kind: kind, register: true, owner: owner, path: path, at: at, error: "org.bluez.Error.AlreadyExists"))
            }
            throw DBusError.named("org.bluez.Error.AlreadyExists", message: "Already Exists")
        }
        var registration = Registration(owner: owner, path: path, adapter: adapter, at: at)
        if kind == .application {
            // bluetoothd reads the application's objects before answering, and refuses one without a service.
            let objects = try await managedObjects(owner, path)
            let refused: (name: String, message: String)? = state.withLock { state in
                if !objects.values.contains(where: { $0[StandInBluetoothd.Names.gattService] != nil }) {
                    return ("org.bluez.Error.Failed", "No object received")
                }
                guard state.applicationRefusals > 0 else { return nil }
                state.applicationRefusals -= 1
                return ("org.bluez.Error.Failed", "Failed to register application (refused by the test)")
            }
            if let refused {
                state.withLock {
                    $0.calls.append(RegistrationCall(kind: kind, register: true, owner: owner, path: path, at: at, error: refused.name))
                }
                throw DBusError.named(refused.name, message: refused.message)
            }
            if configuration.inspectsApplications { registration.objects = objects }
        }
        if kind == .advertisement, configuration.advertisementDelay > .zero {
            try await Task.sleep(for: configuration.advertisementDelay)
        }
        state.withLock { state in
            state.calls.append(RegistrationCall(kind: kind, register: true, owner: owner, path: path, at: at))
            if kind == .application { state.applications.append(registration) } else { state.advertisements.append(registration) }
        }
    }

    func unregister(_ kind: RegistrationCall.Kind, _ call: DBusMethodCall) throws {
        let owner = call.sender ?? ""
        let path = try call.arguments.first?.objectPath ?? "/"
        let found = state.withLock { state -> Bool in
            func remove(_ list: inout [Registration]) -> Bool {
                guard let index = list.firstIndex(where: { $0.owner == owner && $0.path == path }) else { return false }
                list.remove(at: index)
                return true
            }
            let found = kind == .application ? remove(&state.applications) : remove(&state.advertisements)
            state.calls.append(
                RegistrationCall(
                    kind: kind, register: false, owner: owner, path: path, at: .now,
                    error: found ? nil : "org.bluez.Error.DoesNotExist"))
            return found
        }
        if !found { throw DBusError.named("org.bluez.Error.DoesNotExist", message: "Does Not Exist") }
    }

    /// `AgentManager1` at `/org/bluez`, answering as bluetoothd 5.66 does: one agent per client, capabilities by
    /// name (an empty one is KeyboardDisplay), the default only among registered agents.
    func agentManager() -> DBusInterface {
        let capabilities = ["DisplayOnly", "DisplayYesNo", "KeyboardOnly", "NoInputNoOutput", "KeyboardDisplay", ""]
        return DBusInterface(
            name: StandInBluetoothd.Names.agentManager,
            methods: [
                DBusMethod("RegisterAgent", input: "os") { [state] call in
                    let owner = call.sender ?? ""
                    let arguments = try call.arguments
                    guard let path = arguments.first?.objectPath, let capability = arguments.last?.string, capabilities.contains(capability)
                    else {
                        throw DBusError.named("org.bluez.Error.InvalidArguments", message: "Invalid arguments in method call")
                    }
                    try state.withLock { state in
                        if state.agents.contains(where: { $0.owner == owner }) {
                            throw DBusError.named("org.bluez.Error.AlreadyExists", message: "Already Exists")
                        }
                        state.agents.append(
                            StandInBluetoothd.Agent(
                                owner: owner, path: path, capability: capability.isEmpty ? "KeyboardDisplay" : capability))
                    }
                    return []
                },
                DBusMethod("UnregisterAgent", input: "o") { [state] call in
                    let owner = call.sender ?? ""
                    let path = try call.arguments.first?.objectPath
                    try state.withLock { state in
                        guard let index = state.agents.firstIndex(where: { $0.owner == owner && $0.path == path }) else {
                            throw DBusError.named("org.bluez.Error.DoesNotExist", message: "No such Agent")
                        }
                        state.agents.remove(at: index)
                        if state.defaultAgent?.owner == owner { state.defaultAgent = nil }
                    }
                    return []
                },
                DBusMethod("RequestDefaultAgent", input: "o") { [state] call in
                    let owner = call.sender ?? ""
                    let path = try call.arguments.first?.objectPath
                    try state.withLock { state in
                        guard let path, state.agents.contains(where: { $0.owner == owner && $0.path == path }) else {
                            throw DBusError.named("org.bluez.Error.DoesNotExist", message: "No such Agent")
                        }
                        state.defaultAgent = (owner, path)
                    }
                    return []
                },
            ])
    }

    func managedObjects(_ owner: String, _ path: DBusObjectPath) async throws -> [DBusObjectPath: [String: [String: DBusValue]]] {
        let reply = try await connection.call(
            destination: owner, path: path, interface: StandInBluetoothd.Names.objectManager, member: "GetManagedObjects")
        return reply.first?.managedObjects ?? [:]
    }
}
