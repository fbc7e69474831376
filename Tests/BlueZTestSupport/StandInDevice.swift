import DBus

#if canImport(Glibc)
    import Glibc
#endif

/// A ``RemotePeripheral`` as a ``StandInAdapter`` serves it: the `Device1` object (once heard, or at once when
/// cached), `Connect`/`Disconnect`, and, while connected, its `GattService1`/`GattCharacteristic1`/
/// `GattDescriptor1` objects named as bluetoothd names them (`service000a/char000b/desc000d`).
public final class StandInDevice: Sendable {
    public typealias Names = StandInBluetoothd.Names

    public let peripheral: RemotePeripheral
    public let path: DBusObjectPath
    let adapterPath: DBusObjectPath
    private let connection: DBusConnection
    private let newer: Bool
    private let discovering: Locked<Bool>
    private let state = Locked(State())

    struct State: Sendable {
        var exported = false
        var properties: [String: DBusValue] = [:]
        var connectCalls = 0
        var disconnectCalls = 0
        var gattPaths: [DBusObjectPath] = []
        var values: [DBusObjectPath: [UInt8]] = [:]
        /// Characteristics subscribed with StartNotify.
        var notifying: Set<DBusObjectPath> = []
        /// Our ends of acquired notification sockets, by characteristic.
        var sockets: [DBusObjectPath: Int32] = [:]
        var reads: [DBusObjectPath] = []
        var failedWrites: [DBusObjectPath] = []
        /// bluetoothd's ATT bearer is gone while the link is up (``RemoteCharacteristic/ReadEffect/losesTheBearer(times:)``).
        var bearerLost = false
        var bearerLosses = 0
        var timers: [Task<Void, Never>] = []
    }

    init(peripheral: RemotePeripheral, adapterPath: DBusObjectPath, connection: DBusConnection, newerBlueZ: Bool, discovering: Locked<Bool>)
    {
        self.peripheral = peripheral
        self.adapterPath = adapterPath
        self.connection = connection
        newer = newerBlueZ
        self.discovering = discovering
        path = adapterPath.appending("dev_" + peripheral.address.uppercased().replacing(":", with: "_"))
    }

    public var isExported: Bool { state.value.exported }
    public var isConnected: Bool { state.value.properties["Connected"]?.boolean ?? false }
    public var connectCalls: Int { state.value.connectCalls }
    public var disconnectCalls: Int { state.value.disconnectCalls }
    /// The GATT objects read (`ReadValue`), in order.
    public var reads: [DBusObjectPath] { state.value.reads }
    /// The GATT objects whose write failed (``RemoteCharacteristic/pairsAfterFailingWrite``), in order.
    public var failedWrites: [DBusObjectPath] { state.value.failedWrites }
    /// The value last written to each GATT object.
    public var written: [DBusObjectPath: [UInt8]] { state.value.values }
    /// `Device1`'s properties now.
    public var properties: [String: DBusValue] { state.value.properties }

    // MARK: Device1

    static let deviceProperties = [
        "Address", "AddressType", "Name", "Alias", "Appearance", "Adapter", "Paired", "Bonded", "Trusted", "Blocked",
        "LegacyPairing", "Connected", "ServicesResolved", "UUIDs", "ManufacturerData", "ServiceData", "RSSI", "TxPower",
        "AdvertisingFlags", "AdvertisingData",
    ]

    private func deviceInterface() -> DBusInterface {
        let state = self.state
        let full = peripheral.properties(adapter: adapterPath, rssi: true)
        let names = Self.deviceProperties + peripheral.extraProperties.keys.filter { !Self.deviceProperties.contains($0) }.sorted()
        return DBusInterface(
            name: Names.device,
            methods: [
                DBusMethod("Connect") { [weak self] _ in
                    try await self?.connect()
                    return []
                },
                DBusMethod("Disconnect") { [weak self] _ in
                    self?.state.withLock { $0.disconnectCalls += 1 }
                    await self?.drop()
                    return []
                },
            ],
            properties: names.map { name in
                DBusProperty(name, signature: full[name]?.signature ?? .string, get: { state.value.properties[name] })
            })
    }

    /// Exports the device object (InterfacesAdded): with stale properties and no RSSI when `cached`.
    func export(cached: Bool) async throws {
        var properties = peripheral.properties(adapter: adapterPath, rssi: !cached)
        if cached { properties.merge(peripheral.staleProperties) { $1 } }
        let fresh = properties
        let first = state.withLock { state -> Bool in
            state.properties = fresh
            defer { state.exported = true }
            return !state.exported
        }
        if first { try await connection.export([deviceInterface()], at: path) }
    }

    /// Discovery is on: after ``RemotePeripheral/advertisesAfter`` the device is announced, or its
    /// advertisement refreshes the known object (`PropertiesChanged`, RSSI first).
    func heard() {
        schedule(after: peripheral.advertisesAfter) { [self] in
            guard discovering.value else { return }
            if !isExported {
                try? await export(cached: false)
                return
            }
            let fresh = peripheral.properties(adapter: adapterPath, rssi: true)
            let changed = state.withLock { state -> [String: DBusValue] in
                let changed = fresh.filter {
                    ["RSSI", "TxPower", "Name", "UUIDs", "ManufacturerData", "ServiceData", "AdvertisingFlags", "AdvertisingData"].contains(
                        $0.key) && state.properties[$0.key] != $0.value
                }
                state.properties.merge(changed) { $1 }
                return changed
            }
            if !changed.isEmpty { try? await connection.emitPropertiesChanged(path: path, interface: Names.device, changed: changed) }
        }
    }

    /// Discovery stopped: BlueZ drops RSSI and TX power.
    func discoveryStopped() async {
        guard isExported else { return }
        let had = state.withLock { state -> [String] in
            let had = ["RSSI", "TxPower"].filter { state.properties[$0] != nil }
            for name in had { state.properties[name] = nil }
            return had
        }
        if !had.isEmpty { try? await connection.emitPropertiesChanged(path: path, interface: Names.device, changed: [:], invalidated: had) }
    }

    private func set(_ changed: [String: DBusValue]) async {
        state.withLock { $0.properties.merge(changed) { $1 } }
        try? await connection.emitPropertiesChanged(path: path, interface: Names.device, changed: changed)
    }

    private func connect() async throws {
        let attempt = state.withLock { state in
            state.connectCalls += 1
            return state.connectCalls
        }
        switch peripheral.connecting {
        case .fails(let name, let message): throw DBusError.named(name, message: message)
        case .failsFirst(let count) where attempt <= count:
            throw DBusError.named("org.bluez.Error.Failed", message: "le-connection-abort-by-local")
        default: break
        }
        if isConnected { throw DBusError.named("org.bluez.Error.AlreadyConnected", message: "Already Connected") }
        var uuids = peripheral.uuids.map(Self.fullUUID)
        for service in peripheral.services where !uuids.contains(Self.fullUUID(service.uuid)) {
            uuids.append(Self.fullUUID(service.uuid))
        }
        if case .announcesLate(let delay) = peripheral.connecting {
            state.withLock { $0.properties["Connected"] = .boolean(true) }
            try await exportGATT()
            schedule(after: delay) { [self, uuids] in
                await set(["Connected": .boolean(true), "ServicesResolved": .boolean(true), "UUIDs": .strings(uuids)])
            }
            return
        }
        await set(["Connected": .boolean(true)])
        try await exportGATT()
        if peripheral.connecting != .neverResolves {
            await set(["ServicesResolved": .boolean(true), "UUIDs": .strings(uuids)])
        }
        if let after = peripheral.disconnectsAfter {
            schedule(after: after) { [self] in await drop() }
        }
    }

    /// The link goes down: GATT objects removed, sockets closed, `Connected` false.
    func drop() async {
        let (paths, sockets) = state.withLock { state in
            defer {
                state.bearerLost = false
                state.gattPaths = []
                state.sockets = [:]
                state.notifying = []
            }
            return (state.gattPaths, Array(state.sockets.values))
        }
        for socket in sockets { close(socket) }
        for gattPath in paths.reversed() { try? await connection.unexport(gattPath) }
        if isConnected { await set(["Connected": .boolean(false), "ServicesResolved": .boolean(false)]) }
    }

    /// `RemoveDevice`: disconnected and gone (InterfacesRemoved).
    func remove() async {
        cancelTimers()
        await drop()
        let was = state.withLock { state in
            defer { state.exported = false }
            return state.exported
        }
        if was { try? await connection.unexport(path) }
    }

    func cancelTimers() {
        let timers = state.withLock { state in
            defer { state.timers = [] }
            return state.timers
        }
        timers.forEach { $0.cancel() }
    }

    private func schedule(after delay: Duration, _ body: @escaping @Sendable () async -> Void) {
        let task = Task {
            if delay > .zero { try? await Task.sleep(for: delay) }
            guard !Task.isCancelled else { return }
            await body()
        }
        state.withLock { $0.timers.append(task) }
    }

    // MARK: GATT

    func servicePath(_ handle: UInt16) -> DBusObjectPath { path.appending("service" + Self.hex(handle)) }

    /// The object path of the characteristic with declaration handle `handle`.
    public func characteristicPath(_ handle: UInt16) -> DBusObjectPath? {
        for service in peripheral.services where service.characteristics.contains(where: { $0.handle == handle }) {
            return servicePath(service.handle).appending("char" + Self.hex(handle))
        }
        return nil
    }

    private func exportGATT() async throws {
        var exported: [DBusObjectPath] = []
        defer { state.withLock { $0.gattPaths += exported } }
        for service in peripheral.services {
            let servicePath = servicePath(service.handle)
            var properties: [DBusProperty] = [
                .constant("UUID", .string(Self.fullUUID(service.uuid))),
                .constant("Device", .objectPath(path)),
                .constant("Primary", .boolean(service.primary)),
                .constant("Includes", .objectPaths(service.includes.map(self.servicePath))),
            ]
            if newer { properties.append(.constant("Handle", .uint16(service.handle))) }
            try await connection.export([DBusInterface(name: Names.gattService, properties: properties)], at: servicePath)
            exported.append(servicePath)
            for characteristic in service.characteristics {
                let characteristicPath = servicePath.appending("char" + Self.hex(characteristic.handle))
                state.withLock { $0.values[characteristicPath] = characteristic.value }
                try await connection.export(
                    [characteristicInterface(characteristic, at: characteristicPath, service: servicePath)], at: characteristicPath)
                exported.append(characteristicPath)
                for descriptor in characteristic.descriptors {
                    let descriptorPath = characteristicPath.appending("desc" + Self.hex(descriptor.handle))
                    state.withLock { $0.values[descriptorPath] = descriptor.value }
                    try await connection.export(
                        [descriptorInterface(descriptor, at: descriptorPath, characteristic: characteristicPath)], at: descriptorPath)
                    exported.append(descriptorPath)
                }
            }
        }
    }

    private func characteristicInterface(_ characteristic: RemoteCharacteristic, at path: DBusObjectPath, service: DBusObjectPath)
        -> DBusInterface
    {
        let state = self.state
        var properties: [DBusProperty] = [
            .constant("UUID", .string(Self.fullUUID(characteristic.uuid))),
            .constant("Service", .objectPath(service)),
            .constant("Flags", .strings(characteristic.flags)),
            DBusProperty("Value", signature: .bytes, get: { .bytes(state.value.values[path] ?? []) }),
        ]
        if characteristic.canNotify {
            properties.append(
                DBusProperty(
                    "Notifying", signature: .boolean,
                    get: { .boolean(state.value.notifying.contains(path) || state.value.sockets[path] != nil) }))
            if characteristic.acquirable {
                properties.append(DBusProperty("NotifyAcquired", signature: .boolean, get: { .boolean(state.value.sockets[path] != nil) }))
            }
        }
        if newer { properties += [.constant("Handle", .uint16(characteristic.handle)), .constant("MTU", .uint16(247))] }
        var methods = [
            DBusMethod("ReadValue", input: "a{sv}", output: "ay") { [weak self] call in
                guard let self else { return [] }
                try failIfTheBearerIsLost(path)
                switch characteristic.onRead {
                case .none: break
                case .losesTheBearer(let times):
                    try state.withLock { state in
                        guard state.bearerLosses < times else { return }
                        state.bearerLosses += 1
                        state.bearerLost = true
                        state.reads.append(path)
                        throw DBusError.named("org.bluez.Error.Failed", message: "Operation failed with ATT error: 0x0e")
                    }
                case .disconnects: await drop()
                case .vanishes: await remove()
                case .pairsWithoutAnswer:
                    if state.value.properties["Paired"]?.boolean != true {
                        state.withLock { $0.reads.append(path) }
                        await set(["Paired": .boolean(true), "Bonded": .boolean(true)])
                        call.begin()  // later calls are answered meanwhile
                        try? await Task.sleep(for: .seconds(3600))
                        throw DBusError.named("org.bluez.Error.Failed", message: "the read's answer was lost")
                    }
                }
                if characteristic.onRead == .disconnects || characteristic.onRead == .vanishes {
                    state.withLock { $0.reads.append(path) }
                    throw DBusError.named("org.bluez.Error.Failed", message: "Not connected")
                }
                return [
                    .bytes(
                        try await read(
                            path, error: characteristic.readError, pairs: characteristic.pairsOnRead, interface: Names.gattCharacteristic))
                ]
            },
            DBusMethod("WriteValue", input: "aya{sv}") { [weak self] call in
                let value = try call.arguments.first?.bytes ?? []
                if characteristic.pairsAfterFailingWrite, state.value.properties["Paired"]?.boolean != true {
                    state.withLock { $0.failedWrites.append(path) }
                    Task { [weak self] in
                        try? await Task.sleep(for: .milliseconds(200))
                        await self?.set(["Paired": .boolean(true), "Bonded": .boolean(true)])
                    }
                    throw DBusError.named("org.bluez.Error.Failed", message: "Operation failed with ATT error: 0x0e")
                }
                state.withLock { $0.values[path] = value }
                if let self, let answer = characteristic.answersWrites, let target = characteristicPath(answer.handle) {
                    await send(answer.prefix + value, on: target)
                    try? await Task.sleep(for: answer.replyAfter)
                }
                return []
            },
        ]
        if characteristic.canNotify {
            methods += [
                DBusMethod("StartNotify") { [weak self] _ in
                    guard let self else { return [] }
                    if let error = characteristic.subscribeError { throw error }
                    state.withLock { _ = $0.notifying.insert(path) }
                    try? await connection.emitPropertiesChanged(
                        path: path, interface: Names.gattCharacteristic, changed: ["Notifying": .boolean(true)])
                    await sendNotifications(characteristic, path: path)
                    return []
                },
                DBusMethod("StopNotify") { [weak self] _ in
                    guard let self else { return [] }
                    state.withLock { _ = $0.notifying.remove(path) }
                    try? await connection.emitPropertiesChanged(
                        path: path, interface: Names.gattCharacteristic, changed: ["Notifying": .boolean(false)])
                    return []
                },
                DBusMethod("AcquireNotify", input: "a{sv}", output: "hq") { [weak self] _ in
                    guard let self else { return [] }
                    guard characteristic.acquirable else { throw DBusError.named("org.bluez.Error.NotSupported", message: "Not Supported") }
                    if let error = characteristic.subscribeError { throw error }
                    guard state.value.sockets[path] == nil, !state.value.notifying.contains(path) else {
                        throw DBusError.named("org.bluez.Error.InProgress", message: "In Progress")
                    }
                    var ends: [Int32] = [0, 0]
                    guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
                        throw DBusError.system("socketpair", errno: errno)
                    }
                    state.withLock { $0.sockets[path] = ends[0] }
                    await sendNotifications(characteristic, path: path)
                    return [.unixFD(DBusFileDescriptor(owning: ends[1])), .uint16(247)]
                },
            ]
        }
        return DBusInterface(name: Names.gattCharacteristic, methods: methods, properties: properties)
    }

    private func descriptorInterface(_ descriptor: RemoteDescriptor, at path: DBusObjectPath, characteristic: DBusObjectPath)
        -> DBusInterface
    {
        let state = self.state
        var properties: [DBusProperty] = [
            .constant("UUID", .string(Self.fullUUID(descriptor.uuid))),
            .constant("Characteristic", .objectPath(characteristic)),
            DBusProperty("Value", signature: .bytes, get: { .bytes(state.value.values[path] ?? []) }),
        ]
        if newer { properties.append(.constant("Handle", .uint16(descriptor.handle))) }
        return DBusInterface(
            name: Names.gattDescriptor,
            methods: [
                DBusMethod("ReadValue", input: "a{sv}", output: "ay") { [weak self] call in
                    guard let self else { return [] }
                    try failIfTheBearerIsLost(path)
                    return [.bytes(try await read(path, error: descriptor.readError, pairs: false, interface: Names.gattDescriptor))]
                }
            ], properties: properties)
    }

    /// A read while bluetoothd's ATT bearer is gone (``RemoteCharacteristic/ReadEffect/losesTheBearer(times:)``): "Not
    /// connected", as bluetoothd answers it, and recorded.
    private func failIfTheBearerIsLost(_ path: DBusObjectPath) throws {
        try state.withLock { state in
            guard state.bearerLost else { return }
            state.reads.append(path)
            throw DBusError.named("org.bluez.Error.Failed", message: "Not connected")
        }
    }

    private func read(_ path: DBusObjectPath, error: DBusError?, pairs: Bool, interface: String) async throws -> [UInt8] {
        state.withLock { $0.reads.append(path) }
        if let error { throw error }
        if pairs, state.value.properties["Paired"]?.boolean != true {
            await set(["Paired": .boolean(true), "Bonded": .boolean(true)])
        }
        let value = state.value.values[path] ?? []
        // BlueZ updates the cached value, and says so.
        try? await connection.emitPropertiesChanged(path: path, interface: interface, changed: ["Value": .bytes(value)])
        return value
    }

    /// Sends the characteristic's ``RemoteCharacteristic/notifications``: those due at once before the
    /// subscription is answered (so that a loaded test process cannot delay them past a listening window),
    /// the others from a task.
    private func sendNotifications(_ characteristic: RemoteCharacteristic, path: DBusObjectPath) async {
        let now = characteristic.notifications.prefix { $0.after <= .zero }
        for (_, value) in now { await send(value, on: path) }
        let later = Array(characteristic.notifications.dropFirst(now.count))
        guard !later.isEmpty else { return }
        schedule(after: .zero) { [self] in
            let start = ContinuousClock.now
            for (after, value) in later {
                try? await Task.sleep(until: start + after)
                if Task.isCancelled { return }
                await send(value, on: path)
            }
        }
    }

    /// The device notifies (or indicates) `value` on the characteristic at `path`: on its acquired socket, or
    /// as `PropertiesChanged("Value")` when subscribed with StartNotify; nothing when not subscribed.
    public func send(_ value: [UInt8], on path: DBusObjectPath) async {
        let (socket, notifying) = state.withLock { state in
            if state.sockets[path] == nil, state.notifying.contains(path) { state.values[path] = value }
            return (state.sockets[path], state.notifying.contains(path))
        }
        if let socket {
            _ = value.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        } else if notifying {
            try? await connection.emitPropertiesChanged(path: path, interface: Names.gattCharacteristic, changed: ["Value": .bytes(value)])
        }
    }

    // MARK: Forms

    static func hex(_ handle: UInt16) -> String {
        let digits = String(handle, radix: 16)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// `180f` → `0000180f-0000-1000-8000-00805f9b34fb`; 128-bit forms lower-cased.
    static func fullUUID(_ uuid: String) -> String {
        let lower = uuid.lowercased()
        switch lower.count {
        case 4: return "0000\(lower)-0000-1000-8000-00805f9b34fb"
        case 8: return "\(lower)-0000-1000-8000-00805f9b34fb"
        default: return lower
        }
    }
}
