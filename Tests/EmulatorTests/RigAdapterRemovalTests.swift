import BlueZ
import BlueZTestSupport
import DBus
import DBusTestSupport
import Emulator
import Foundation
import Profile
import Testing

/// A rig's devices on one loop, each on its adapter: an adapter that goes away takes only its device down, and the
/// device comes back with the adapter (issue 43: "an adapter that goes away takes only its device down, and it
/// returns with the adapter").
@Suite struct RigAdapterRemovalTests {
    static func device(_ profile: String, adapter: String, bus: PrivateBus, loop: DBusEventLoop) throws -> (Emulator, EventLog) {
        var options = EmulatorOptions()
        options.bus = .address(bus.address)
        options.adapter = adapter
        options.seed = 1
        let log = try EventLog(format: .text)
        let path = RecoveryTests.profiles.appendingPathComponent(profile).path
        return (try Emulator(profile: ProfileLoader.load(path: path), options: options, log: log, loop: loop), log)
    }

    @Test func anAdapterThatGoesAwayTakesOnlyItsDevice() async throws {
        let bus = try PrivateBus()
        let bluetoothd = try await StandInBluetoothd(bus: bus)
        try await bluetoothd.addAdapter("hci0", address: "00:AA:01:01:00:01")
        let reader = try await bluetoothd.addAdapter("hci1", address: "00:AA:01:02:00:02")
        let loop = try DBusEventLoop(name: "rig")
        let (lock, lockLog) = try Self.device("noke-lock.json", adapter: "hci0", bus: bus, loop: loop)
        let (leaf, leafLog) = try Self.device("leaf-reader.json", adapter: "hci1", bus: bus, loop: loop)
        try await lock.start()
        try await leaf.start()
        func registered(on adapter: String) -> (applications: Int, advertisements: Int) {
            let path = DBusObjectPath("/org/bluez/\(adapter)")
            return (
                bluetoothd.applications.filter { $0.adapter == path }.count, bluetoothd.advertisements.filter { $0.adapter == path }.count
            )
        }
        // The lock: its application and advertisement; the reader: its application and two advertisements.
        #expect(registered(on: "hci0") == (1, 1) && registered(on: "hci1") == (1, 2))

        // The reader's adapter is unplugged: the reader's device goes down and waits; the lock does not notice.
        try await bluetoothd.removeAdapter(reader)
        #expect(try await eventually { leafLog.events(since: 0).contains { $0.kind == .bluetoothdLost } })
        #expect(leafLog.events(since: 0).contains { $0.detail?.contains("the adapter was removed") == true })
        #expect(registered(on: "hci1") == (0, 0), "bluetoothd dropped the reader's registrations with its adapter")
        let lockEvents = lockLog.events(since: 0)
        #expect(!lockEvents.contains { $0.kind == .bluetoothdLost || $0.kind == .error }, "\(lockEvents.map(\.text))")
        #expect(registered(on: "hci0") == (1, 1), "the lock still serves and advertises")
        #expect(await lock.status().advertising.advertised)

        // The adapter comes back: the reader registers again on it, the lock untouched.
        let lockOwner = try #require(bluetoothd.applications.first { $0.adapter == "/org/bluez/hci0" }?.owner)
        let lockRegistrations = bluetoothd.registrationCalls.filter { $0.owner == lockOwner }.count
        try await bluetoothd.addAdapter("hci1", address: "00:AA:01:02:00:02", announce: true)
        #expect(
            try await eventually(within: .seconds(20)) { leafLog.events(since: 0).contains { $0.kind == .bluetoothdBack } },
            "\(leafLog.events(since: 0).map(\.text))")
        #expect(try await eventually { registered(on: "hci1") == (1, 2) }, "the reader is back on hci1")
        #expect(registered(on: "hci0") == (1, 1))
        #expect(bluetoothd.registrationCalls.filter { $0.owner == lockOwner }.count == lockRegistrations, "nothing of the lock's redone")
        await leaf.stop()
        await lock.stop()
        #expect(bluetoothd.applications.isEmpty && bluetoothd.advertisements.isEmpty)
        _ = bus
    }
}
