import BlueZ
import DBus
import DBusTestSupport
import Emulator
import Foundation
import Profile
import Testing

/// Recovery after a bluetoothd restart, against a stand-in bluetoothd on a private bus.
@Suite struct RecoveryTests {
    static let profiles = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("profiles")

    /// A registration attempt started by a stack event must not overlap the periodic retry. Seen in the
    /// sandbox with BlueZ 5.82: after a restart the first attempt fails (no adapter yet) and schedules
    /// retries; the adapter then appears and an event starts a second attempt; a retry tick while it
    /// is still registering failed with "… is already exported", and its clean-up unregistered the
    /// application the other attempt had just registered: gattemu kept running with nothing registered.
    @Test func aRetryTickDuringAnEventsRegistrationLeavesEverythingRegistered() async throws {
        let bus = try PrivateBus()
        let first = try await StandInBluetoothd(bus: bus)
        try await first.addAdapter(announce: false)
        var options = EmulatorOptions()
        options.bus = .address(bus.address)
        options.seed = 1
        let log = try EventLog(format: .text)
        let emulator = try Emulator(profile: ProfileLoader.load(path: Self.profiles.appendingPathComponent("noke-lock.json").path),
                                options: options, log: log)
        try await emulator.start()
        #expect(first.applications.withLock { $0 } == 1)
        #expect(first.advertisements.withLock { $0 } == 1)

        await first.connection.close()  // bluetoothd exits: org.bluez leaves the bus
        try await waitUntil { log.events(since: 0).contains { $0.kind == .bluetoothdLost } }

        // The new bluetoothd has no adapter yet: the first attempt fails and retries start, one a second.
        let second = try await StandInBluetoothd(bus: bus, advertisementDelay: .seconds(1))
        try await waitUntil { log.events(since: 0).contains { $0.detail?.contains("not ready yet") == true } }
        // Half a second later the adapter appears; the attempt that starts then is still registering
        // its (slow) advertisement when the next retry tick comes.
        try await Task.sleep(for: .milliseconds(500))
        try await second.addAdapter(announce: true)
        try await waitUntil { log.events(since: 0).contains { $0.kind == .bluetoothdBack } }
        try await Task.sleep(for: .seconds(2))  // let any overlapping attempt finish (and undo)

        #expect(second.applications.withLock { $0 } == 1, "the GATT application is registered, once")
        #expect(second.advertisements.withLock { $0 } == 1, "the advertisement is registered, once")
        await emulator.stop()
        #expect(second.applications.withLock { $0 } == 0)
        #expect(second.advertisements.withLock { $0 } == 0)
    }

    /// The bus itself going away cannot be recovered from: the emulator asks to end, with the reason, and
    /// `stop()` returns instead of waiting for replies that can never come.
    @Test func losingTheBusEndsTheEmulatorAndStopReturns() async throws {
        let bus = try PrivateBus()
        let bluetoothd = try await StandInBluetoothd(bus: bus)
        try await bluetoothd.addAdapter(announce: false)
        var options = EmulatorOptions()
        options.bus = .address(bus.address)
        options.seed = 1
        let log = try EventLog(format: .text)
        let emulator = try Emulator(profile: ProfileLoader.load(path: Self.profiles.appendingPathComponent("noke-lock.json").path),
                                options: options, log: log)
        try await emulator.start()
        bus.stop()
        let reasons = AsyncCollector<String>()
        Task { for await reason in emulator.terminations { reasons.append(reason) } }
        #expect(await reasons.wait(for: 1) == ["lost the connection to the D-Bus system bus"])
        let stopped = AsyncCollector<Bool>()
        Task { await emulator.stop(); stopped.append(true) }
        #expect(await stopped.wait(for: 1) == [true], "stop() returned")
        #expect(log.events(since: 0).last?.kind == .stopped)
    }

    private func waitUntil(timeout: Duration = .seconds(5), _ condition: @Sendable () -> Bool) async throws {
        let end = ContinuousClock.now + timeout
        while !condition() {
            guard ContinuousClock.now < end else { throw CancellationError() }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// Owns `org.bluez` and, after `addAdapter`, exports one powered adapter; counts the applications and
/// advertisements registered with it now (registrations minus unregistrations).
final class StandInBluetoothd: Sendable {
    let connection: DBusConnection
    let adapterPath: DBusObjectPath = "/org/bluez/hci0"
    let applications = Locked(0)
    let advertisements = Locked(0)
    /// Who registered the latest application (gattemu's unique name).
    let registrant = Locked<String?>(nil)
    let advertisementDelay: Duration

    init(bus: PrivateBus, advertisementDelay: Duration = .zero) async throws {
        connection = try await bus.connect()
        self.advertisementDelay = advertisementDelay
        try await connection.exportObjectManager(at: "/")
        try await connection.requestName(BlueZNames.service)
    }

    /// Exports the adapter; `announce` sends what bluetoothd sends once it is up: InterfacesAdded, then Powered.
    func addAdapter(announce: Bool) async throws {
        let applications = self.applications
        let advertisements = self.advertisements
        let registrant = self.registrant
        let delay = advertisementDelay
        let alias = Locked("host")
        try await connection.export([
            DBusInterface(name: BlueZNames.adapter, properties: [
                .constant("Address", .string("00:AA:01:01:00:01")),
                DBusProperty("Alias", signature: .string, get: { .string(alias.withLock { $0 }) }, set: { value in
                    alias.withLock { $0 = value.string ?? "" }
                }),
                .constant("Powered", .boolean(true)),
            ]),
            DBusInterface(name: BlueZNames.gattManager, methods: [
                DBusMethod("RegisterApplication", input: "oa{sv}") { call in
                    applications.withLock { $0 += 1 }
                    registrant.withLock { $0 = call.sender }
                    return []
                },
                DBusMethod("UnregisterApplication", input: "o") { _ in
                    applications.withLock { $0 -= 1 }
                    return []
                },
            ]),
            DBusInterface(name: BlueZNames.advertisingManager, methods: [
                DBusMethod("RegisterAdvertisement", input: "oa{sv}") { _ in
                    try await Task.sleep(for: delay)
                    advertisements.withLock { $0 += 1 }
                    return []
                },
                DBusMethod("UnregisterAdvertisement", input: "o") { _ in
                    advertisements.withLock { $0 -= 1 }
                    return []
                },
            ], properties: [
                .constant("SupportedInstances", .byte(4)),
                .constant("ActiveInstances", .byte(0)),
                .constant("SupportedIncludes", .strings(["tx-power", "appearance", "local-name"])),
            ]),
        ], at: adapterPath)
        guard announce else { return }
        try await connection.emitSignal(
            path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded",
            arguments: [.objectPath(adapterPath), .dictionary(key: .string, value: "a{sv}", [
                DBusDictionaryEntry(key: .string(BlueZNames.adapter), value: .stringVariantDictionary(["Powered": .boolean(true)])),
            ])])
        try await connection.emitPropertiesChanged(path: adapterPath, interface: BlueZNames.adapter, changed: ["Powered": .boolean(true)])
    }
}
