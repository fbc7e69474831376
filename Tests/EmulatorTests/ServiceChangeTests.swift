import BlueZ
import BlueZTestSupport
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
        let (emulator, bluetoothd, log, bus) = try await started(
            #"""
            {"format": 1, "device": {"name": "Updater"},
             "services": [
               {"id": "battery", "uuid": "180f", "characteristics": [{"id": "level", "uuid": "2a19", "flags": ["read"], "value": {"hex": "64"}}]},
               {"id": "update", "uuid": "12345678-0000-4000-8000-0000000000aa", "present": false,
                "characteristics": [{"id": "image", "uuid": "12345678-0000-4000-8000-0000000000ab", "flags": ["write"]}]}]}
            """#)
        func uuids() -> Set<String> {
            Set(
                bluetoothd.applications.flatMap {
                    $0.objects?.values.compactMap { $0[StandInBluetoothd.Names.gattService]?["UUID"]?.string } ?? []
                })
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

    /// An emulator started on `json`, and a stand-in bluetoothd that keeps the applications' objects (and, as
    /// bluetoothd, refuses an empty one).
    private func started(_ json: String) async throws -> (Emulator, StandInBluetoothd, EventLog, PrivateBus) {
        let profile = try ProfileLoader.load(json: json, file: "profile.json")
        let bus = try PrivateBus()
        let bluetoothd = try await StandInBluetoothd.withAdapter(bus, configuration: .init(inspectsApplications: true))
        var options = EmulatorOptions()
        options.bus = .address(bus.address)
        let log = try EventLog(format: .text)
        let emulator = try Emulator(profile: profile, options: options, log: log)
        try await emulator.start()
        return (emulator, bluetoothd, log, bus)
    }

    private static let oneService = #"""
        {"format": 1, "device": {"name": "Lonely"},
         "advertisements": [{"localName": "Lonely", "serviceUUIDs": ["180f"]}],
         "services": [{"id": "battery", "uuid": "180f",
                       "characteristics": [{"id": "level", "uuid": "2a19", "flags": ["read"], "value": {"hex": "64"}}]}]}
        """#

    /// bluetoothd refuses an application without objects ("No object received"): hiding the last service
    /// leaves no application registered, advertising as it was; showing it again registers it.
    @Test func hidingTheLastServiceLeavesNoApplication() async throws {
        let (emulator, bluetoothd, log, bus) = try await started(Self.oneService)
        #expect(bluetoothd.applications.count == 1 && bluetoothd.advertisements.count == 1)

        #expect(try await emulator.setService("battery", present: false))
        #expect(log.events(since: 0).last?.detail == "service battery removed: no service left, so no GATT application registered")
        #expect(bluetoothd.applications.isEmpty, "no application registered")
        #expect(bluetoothd.advertisements.count == 1, "still advertising")
        #expect(await emulator.status().services.isEmpty)
        #expect(bluetoothd.registrationCalls.allSatisfy { $0.error == nil }, "nothing bluetoothd refuses was asked")

        #expect(try await emulator.setService("battery", present: true))
        #expect(bluetoothd.applications.count == 1)
        #expect(await emulator.status().services.map(\.id) == ["battery"])
        await emulator.stop()
        _ = bus
    }

    /// A profile whose services all start absent starts, with no application, and gets one when one is shown.
    @Test func startsWithNoServicePresent() async throws {
        let json = Self.oneService.replacingOccurrences(of: #""uuid": "180f","#, with: #""uuid": "180f", "present": false,"#)
        let (emulator, bluetoothd, _, bus) = try await started(json)
        #expect(bluetoothd.applications.isEmpty && bluetoothd.advertisements.count == 1)
        #expect(try await emulator.setService("battery", present: true))
        #expect(bluetoothd.applications.count == 1)
        await emulator.stop()
        _ = bus
    }

    /// A registration bluetoothd refuses puts the previous table back: the call fails (503), saying so, and the
    /// device keeps the services it had; a later change works.
    @Test func aRefusedRegistrationPutsThePreviousTableBack() async throws {
        let json = Self.oneService.replacingOccurrences(
            of: "]}]}",
            with: #"""
                ]}, {"id": "update", "uuid": "12345678-0000-4000-8000-0000000000aa", "present": false,
                     "characteristics": [{"id": "image", "uuid": "12345678-0000-4000-8000-0000000000ab", "flags": ["write"]}]}]}
                """#)
        let (emulator, bluetoothd, log, bus) = try await started(json)
        func uuids() -> [String] {
            bluetoothd.applications.flatMap {
                $0.objects?.values.compactMap { $0[StandInBluetoothd.Names.gattService]?["UUID"]?.string } ?? []
            }.sorted()
        }
        #expect(uuids() == ["0000180f-0000-1000-8000-00805f9b34fb"])

        bluetoothd.refuseApplications(1)
        do {
            try await emulator.setService("update", present: true)
            Issue.record("a refused registration was reported as done")
        } catch {
            #expect(error.kind == .unavailable)
            #expect(
                error.message.contains("refused by the test") && error.message.contains("previous GATT table registered again"),
                "\(error.message)")
        }
        #expect(uuids() == ["0000180f-0000-1000-8000-00805f9b34fb"], "the previous table is back")
        #expect(await emulator.status().services.map(\.id) == ["battery"])
        #expect(log.events(since: 0).contains { $0.kind == .error && $0.detail?.contains("previous GATT table registered again") == true })

        #expect(try await emulator.setService("update", present: true), "the failed change was undone, so it is a change")
        #expect(uuids() == ["0000180f-0000-1000-8000-00805f9b34fb", "12345678-0000-4000-8000-0000000000aa"])

        // Hiding a service while the registration of the rest is refused: both come back.
        bluetoothd.refuseApplications(1)
        await #expect(throws: ControlFailure.self) { try await emulator.setService("battery", present: false) }
        #expect(uuids() == ["0000180f-0000-1000-8000-00805f9b34fb", "12345678-0000-4000-8000-0000000000aa"])
        await emulator.stop()
        _ = bus
    }
}
