import BlueZ
import BlueZTestSupport
import ControlContract
import DBus
import DBusTestSupport
import Emulator
import Foundation
import Profile
import Testing

/// Services added to and removed from the GATT table while running: the application is registered again with
/// the services present (bluetoothd then sends Service Changed), and the status follows.
@Suite struct ServiceChangeTests {
    @Test func aServiceAppearsAndGoesAway() async throws {
        let profile = try ProfileLoader.load(json: #"""
            {"format": 1, "device": {"name": "Updater"},
             "services": [
               {"id": "battery", "uuid": "180f", "characteristics": [{"id": "level", "uuid": "2a19", "flags": ["read"], "value": {"hex": "64"}}]},
               {"id": "update", "uuid": "12345678-0000-4000-8000-0000000000aa", "present": false,
                "characteristics": [{"id": "image", "uuid": "12345678-0000-4000-8000-0000000000ab", "flags": ["write"]}]}]}
            """#, file: "update.json")
        let bus = try PrivateBus()
        let bluetoothd = try await StandInBluetoothd.withAdapter(bus, configuration: .init(inspectsApplications: true))
        var options = EmulatorOptions()
        options.bus = .address(bus.address)
        let log = try EventLog(format: .text)
        let emulator = try Emulator(profile: profile, options: options, log: log)
        try await emulator.start()
        func uuids() -> Set<String> {
            Set(bluetoothd.applications.flatMap { $0.objects?.values.compactMap { $0[StandInBluetoothd.Names.gattService]?["UUID"]?.string } ?? [] })
        }
        #expect(uuids() == ["0000180f-0000-1000-8000-00805f9b34fb"], "the absent service is not registered")
        #expect(await emulator.status().services.map(\.id) == ["battery"])

        #expect(try await emulator.setService("update", present: true))
        #expect(uuids() == ["0000180f-0000-1000-8000-00805f9b34fb", "12345678-0000-4000-8000-0000000000aa"])
        #expect(bluetoothd.applications.count == 1)
        #expect(await emulator.status().services.map(\.id) == ["battery", "update"])
        #expect(try await emulator.setService("update", present: true) == false, "already present: nothing to change")

        #expect(try await emulator.setService("update", present: false))
        #expect(uuids() == ["0000180f-0000-1000-8000-00805f9b34fb"])
        let calls = bluetoothd.registrationCalls.filter { $0.kind == .application }.map(\.register)
        #expect(calls == [true, false, true, false, true], "registered, then unregistered and registered for each change")
        #expect(bluetoothd.registrationCalls.allSatisfy { $0.error == nil })
        do {
            try await emulator.setService("firmware", present: true)
            Issue.record("an unknown service was accepted")
        } catch {
            #expect(error.kind == .notFound && error.details["known"] == ["battery", "update"])
        }
        #expect(log.events(since: 0).filter { $0.detail?.contains("bluetoothd sends Service Changed") == true }.count == 2)
        await emulator.stop()
        _ = bus
    }
}
