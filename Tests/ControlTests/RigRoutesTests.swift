import Control
import ControlContract
import Emulator
import Foundation
import Hummingbird
import Profile
import Testing

/// The control API of a rig: two never-started emulators (the real runtime, no BlueZ side) sharing one event log,
/// as `gattemu run A@hci0 B@hci1` makes them.
@Suite struct RigRoutesTests {
    struct Rig {
        let log: EventLog
        let lock: Emulator
        let reader: Emulator
        let devices: ControlDevices
    }

    func makeRig() throws -> Rig {
        let log = try EventLog(format: .json)
        func emulator(_ name: String, _ id: String) throws -> Emulator {
            let profile = try ProfileLoader.load(path: profilesFolder.appendingPathComponent("\(name).json").path)
            return try Emulator(profile: profile, options: EmulatorOptions(), log: DeviceEventLog(log, device: id))
        }
        let lock = try emulator("noke-lock", "lock")
        let reader = try emulator("leaf-reader", "reader")
        let devices = ControlDevices(
            [
                .init(id: "lock", profile: "profiles/noke-lock.json", adapter: "hci1", target: lock),
                .init(id: "reader", profile: "profiles/leaf-reader.json", adapter: "hci2", target: reader),
            ], events: log)
        return Rig(log: log, lock: lock, reader: reader, devices: devices)
    }

    func withRigAPI<T>(_ rig: Rig, _ body: @Sendable (RouterClient) async throws -> T) async throws -> T {
        let server = try ControlServer(endpoint: ControlEndpoint(host: "127.0.0.1", port: 80), token: nil, devices: rig.devices)
        return try await body(RouterClient(router: server.router()))
    }

    @Test func devicesAreListedWithTheirAdaptersAndStates() async throws {
        let rig = try makeRig()
        rig.devices.set("reader", .failed, reason: "no adapter hci2")
        try await withRigAPI(rig) { api in
            let (status, body) = try await api.call(.get, "/v1/devices")
            #expect(status == .ok)
            let devices = try #require(body["devices"] as? [[String: Any]])
            #expect(devices.map { $0["id"] as? String } == ["lock", "reader"])
            #expect(devices.map { $0["adapter"] as? String } == ["hci1", "hci2"])
            #expect(devices.map { $0["state"] as? String } == ["starting", "failed"])
            #expect(devices[1]["reason"] as? String == "no adapter hci2")
        }
    }

    @Test func eachDeviceIsDrivenUnderItsOwnPath() async throws {
        let rig = try makeRig()
        try await withRigAPI(rig) { api in
            let (lockStatus, lock) = try await api.call(.get, "/v1/devices/lock/status")
            #expect(lockStatus == .ok)
            #expect((lock["profile"] as? String)?.hasSuffix("noke-lock.json") == true)
            let (_, reader) = try await api.call(.get, "/v1/devices/reader/status")
            #expect((reader["profile"] as? String)?.hasSuffix("leaf-reader.json") == true)
            // A fault on one device is that device's only.
            let (added, _) = try await api.call(.post, "/v1/devices/reader/faults", json: #"{"on": "notify", "drop": true}"#)
            #expect(added == .created)
            #expect(await rig.reader.faults().count == 1)
            #expect(await rig.lock.faults().isEmpty)
            let (_, lockFaults) = try await api.call(.get, "/v1/devices/lock/faults")
            #expect((lockFaults["faults"] as? [Any])?.isEmpty == true)
            let (unknown, body) = try await api.call(.get, "/v1/devices/door/status")
            #expect(unknown == .notFound)
            #expect(body["known"] as? [String] == ["lock", "reader"])
        }
    }

    @Test func ownPathsAboutADeviceAskWhichOneButEventsAreTheRigs() async throws {
        let rig = try makeRig()
        _ = try await rig.lock.setVariable("lockState", to: .integer(1))
        try await rig.reader.fireTrigger("touch", arguments: [:])
        try await withRigAPI(rig) { api in
            let (status, body) = try await api.call(.get, "/v1/status")
            #expect(status == .conflict)
            #expect(body["known"] as? [String] == ["lock", "reader"])
            let (eventsStatus, all) = try await api.call(.get, "/v1/events")
            #expect(eventsStatus == .ok)
            let devices = Set(((all["events"] as? [[String: Any]]) ?? []).compactMap { $0["device"] as? String })
            #expect(devices == ["lock", "reader"])
            let (_, readerOnly) = try await api.call(.get, "/v1/devices/reader/events")
            let readerEvents = (readerOnly["events"] as? [[String: Any]]) ?? []
            #expect(!readerEvents.isEmpty)
            #expect(readerEvents.allSatisfy { $0["device"] as? String == "reader" })
            let (_, limited) = try await api.call(.get, "/v1/devices/lock/events?limit=1")
            #expect((limited["events"] as? [[String: Any]])?.count == 1)
            #expect((limited["events"] as? [[String: Any]])?.first?["device"] as? String == "lock")
        }
    }

    @Test func oneDeviceAnswersAtBothPaths() async throws {
        let emulator = try makeEmulator()
        let server = try ControlServer(
            endpoint: ControlEndpoint(host: "127.0.0.1", port: 80), token: nil, target: emulator, device: "noke-lock")
        let api = RouterClient(router: server.router())
        let (own, ownBody) = try await api.call(.get, "/v1/status")
        let (scoped, scopedBody) = try await api.call(.get, "/v1/devices/noke-lock/status")
        #expect(own == .ok && scoped == .ok)
        #expect(ownBody["profile"] as? String == scopedBody["profile"] as? String)
        let (_, list) = try await api.call(.get, "/v1/devices")
        #expect((list["devices"] as? [[String: Any]])?.map { $0["id"] as? String } == ["noke-lock"])
    }

    @Test func eventsOfADeviceCarryItsIdInBothFormats() {
        let event = EmulatorEvent(time: 1, kind: .note, detail: "hello", device: "lock\u{1b}[2J")
        #expect(event.json.contains(#""device":"lock\u001b[2J""#))
        #expect(!event.text.contains("\u{1b}"), "a device id from a file name is escaped on the console")
        #expect(event.text.contains("[lock"))
    }
}
