import BlueZ
import DBus
import DBusTestSupport
import Synchronization

/// Stands in for bluetoothd on a private bus: owns `org.bluez`, exports one adapter, and records what
/// gattemu registers. It calls gattemu's objects exactly as bluetoothd does (same methods, same options).
final class FakeBluetoothd: Sendable {
    let connection: DBusConnection
    let adapterPath: DBusObjectPath = "/org/bluez/hci0"
    let registeredApplications = Locked<[Registration]>([])
    let registeredAdvertisements = Locked<[Registration]>([])
    let alias = Locked("host")

    struct Registration: Sendable {
        var owner: String
        var path: DBusObjectPath
    }

    /// `newerBlueZ`: the adapter lists `Manufacturer` and `Version` as BlueZ 5.72 and later do (those
    /// open one AcquireNotify socket per central); without, it looks like BlueZ 5.66.
    init(bus: PrivateBus, newerBlueZ: Bool = false) async throws {
        connection = try await bus.connect()
        try await connection.requestName(BlueZNames.service)
        let registeredApplications = self.registeredApplications
        let registeredAdvertisements = self.registeredAdvertisements
        let alias = self.alias
        try await connection.exportObjectManager(at: "/")
        try await connection.export([
            DBusInterface(name: BlueZNames.adapter, properties: [
                .constant("Address", .string("00:AA:01:01:00:01")),
                DBusProperty("Alias", signature: .string, get: { .string(alias.withLock { $0 }) }, set: { value in
                    alias.withLock { $0 = value.string ?? "" }
                }),
                .constant("Powered", .boolean(true)),
            ] + (newerBlueZ ? [.constant("Manufacturer", .uint16(1521)), .constant("Version", .byte(9))] : [])),
            DBusInterface(name: BlueZNames.gattManager, methods: [
                DBusMethod("RegisterApplication", input: "oa{sv}") { call in
                    let path = try call.arguments[0].objectPath ?? "/"
                    registeredApplications.withLock { $0.append(Registration(owner: call.sender ?? "", path: path)) }
                    return []
                },
                DBusMethod("UnregisterApplication", input: "o") { call in
                    let path = try call.arguments[0].objectPath
                    registeredApplications.withLock { $0.removeAll { $0.path == path } }
                    return []
                },
            ]),
            DBusInterface(name: BlueZNames.advertisingManager, methods: [
                DBusMethod("RegisterAdvertisement", input: "oa{sv}") { call in
                    let path = try call.arguments[0].objectPath ?? "/"
                    registeredAdvertisements.withLock { $0.append(Registration(owner: call.sender ?? "", path: path)) }
                    return []
                },
                DBusMethod("UnregisterAdvertisement", input: "o") { call in
                    let path = try call.arguments[0].objectPath
                    registeredAdvertisements.withLock { $0.removeAll { $0.path == path } }
                    return []
                },
            ], properties: [
                .constant("SupportedInstances", .byte(4)),
                .constant("ActiveInstances", .byte(0)),
                .constant("SupportedIncludes", .strings(["tx-power", "appearance", "local-name"])),
            ]),
        ], at: adapterPath)
    }

    /// Calls a method of gattemu's object as bluetoothd would.
    func call(_ target: String, _ path: DBusObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
        try await connection.call(destination: target, path: path, interface: interface, member: member, arguments: arguments)
    }

    /// The options bluetoothd 5.66 sends with ReadValue/WriteValue.
    static func options(offset: UInt16 = 0, mtu: UInt16 = 517) -> DBusValue {
        var options: [String: DBusValue] = ["device": .objectPath("/org/bluez/hci0/dev_00_AA_01_02_00_02"), "link": .string("LE"), "mtu": .uint16(mtu)]
        if offset > 0 { options["offset"] = .uint16(offset) }
        return .stringVariantDictionary(options)
    }
}

/// A request handler that records what it gets and answers from a script.
final class RecordingHandler: GattRequestHandler {
    let reads = Locked<[GattReadRequest]>([])
    let writes = Locked<[GattWriteRequest]>([])
    let subscriptions = Locked<[GattSubscriptionChange]>([])
    let value: [UInt8]
    let writeError: GattError?

    init(value: [UInt8] = Array(0..<100), writeError: GattError? = nil) {
        self.value = value
        self.writeError = writeError
    }

    func read(_ request: GattReadRequest) async throws(GattError) -> [UInt8] {
        reads.withLock { $0.append(request) }
        guard request.offset <= value.count else { throw .invalidOffset }
        return Array(value.dropFirst(request.offset))
    }

    func write(_ request: GattWriteRequest) async throws(GattError) {
        writes.withLock { $0.append(request) }
        if let writeError { throw writeError }
    }

    func subscriptionChanged(_ change: GattSubscriptionChange) async {
        subscriptions.withLock { $0.append(change) }
    }

    func indicationConfirmed(characteristic: String) async {}
}
