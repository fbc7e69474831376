import BlueZ
import BlueZTestSupport
import DBus
import DBusTestSupport
import Emulator
import Foundation
import Profile
import Testing

/// An unprivileged local user on a bus with this machine's system-bus policy (Debian's `system.conf` and
/// BlueZ's `bluetooth.conf`) tries to take gattemu over with signals posing as the bus and as bluetoothd,
/// and root (but not bluetoothd) calls gattemu's objects: nothing changes, and each attempt is logged.
@Suite struct HostileBusTests {
    @Test(.timeLimit(.minutes(5))) func spoofedSignalsAndForeignCallsChangeNothing() async throws {
        // Owning org.bluez needs root under this policy; the attacker then runs as `nobody`.
        try #require(ChildProcess.canDropPrivileges, "run as root: the test owns org.bluez under the system bus policy")
        let bus = try PrivateBus(policy: .system)
        defer { bus.stop() }
        let (bluetoothd, emulator, log) = try await RecoveryTests.startedNokeEmulator(on: bus)
        let target = try #require(bluetoothd.applications.last?.owner)
        let owner = bluetoothd.connection.uniqueName

        func send(_ dbusSend: [String]) async throws {
            let status = try await ChildProcess.runUnprivileged(["dbus-send", "--bus=\(bus.address)", "--type=signal"] + dbusSend)
            #expect(status == 0, "dbus-send \(dbusSend)")
        }
        for destination in [["--dest=\(target)"], []] {
            // "bluetoothd went away", then "came back" as someone else.
            try await send(
                destination + [
                    "/org/freedesktop/DBus", "org.freedesktop.DBus.NameOwnerChanged",
                    "string:org.bluez", "string:\(owner)", "string:",
                ])
            try await send(
                destination + [
                    "/org/freedesktop/DBus", "org.freedesktop.DBus.NameOwnerChanged",
                    "string:org.bluez", "string:", "string::1.999",
                ])
            // "The adapter was removed."
            try await send(
                destination + [
                    "/", "org.freedesktop.DBus.ObjectManager.InterfacesRemoved",
                    "objpath:/org/bluez/hci0", "array:string:org.bluez.Adapter1",
                ])
        }
        // Root, but not bluetoothd, reads with a hostile offset.
        let stranger = try await bus.connect()
        let call = await #expect(throws: DBusError.self) {
            try await stranger.call(
                destination: target, path: "/org/gattemu/app0/service0/char0", interface: BlueZNames.gattCharacteristic,
                member: "ReadValue", arguments: [.stringVariantDictionary(["offset": .int64(-5)])])
        }
        #expect(call?.name == DBusError.Name.accessDenied)
        // Everything sent so far has been read by gattemu once a call made after it is answered.
        _ = try await bluetoothd.connection.call(
            destination: target, path: "/org/gattemu/app0", interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")

        let events = log.events(since: 0)
        #expect(!events.contains { $0.kind == .bluetoothdLost || $0.kind == .bluetoothdBack }, "\(events.map(\.text))")
        #expect(bluetoothd.applications.count == 1 && bluetoothd.advertisements.count == 1)
        let status = await emulator.status()
        #expect(status.advertising.advertised)
        let refused = events.filter { $0.kind == .refused }.compactMap(\.detail)
        #expect(refused.filter { $0.contains("signal sent to us directly") }.count == 3, "\(refused)")
        #expect(refused.contains { $0.contains("ReadValue") && $0.contains("not allowed") }, "\(refused)")
        // bluetoothd itself is still served.
        let value = try await bluetoothd.connection.call(
            destination: target, path: "/org/gattemu/app0/service0/char0", interface: BlueZNames.gattCharacteristic,
            member: "ReadValue", arguments: [.stringVariantDictionary([:])])
        #expect(value.first?.arrayElements != nil)
        await emulator.stop()
        #expect(bluetoothd.applications.isEmpty)
    }
}
