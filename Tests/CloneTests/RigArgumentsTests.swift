import Foundation
import Testing

/// `gattemu run A@ADAPTER B@ADAPTER`: what a rig's command line may not say is refused before anything starts
/// (exit 2, one line naming the argument), and a device id comes from its profile's file name.
@Suite struct RigArgumentsTests {
    static let profiles = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("profiles").path

    func refused(_ arguments: [String], saying words: String) async throws {
        let run = try await GattemuCommand.run(["run"] + arguments + ["--control", "off"], bus: "unix:path=/nonexistent")
        #expect(run.status == 2, "\(arguments): \(run.stderr)")
        #expect(run.stderr.contains(words), "\(arguments): \(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1, "one line: \(run.stderr)")
    }

    @Test func everyDeviceOfARigNamesItsOwnAdapter() async throws {
        let lock = "\(Self.profiles)/noke-lock.json"
        let reader = "\(Self.profiles)/leaf-reader.json"
        try await refused(["\(lock)@hci1", reader], saying: "give each its adapter as PROFILE@ADAPTER")
        try await refused(["\(lock)@hci1", "\(reader)@hci1"], saying: "adapter hci1 is already")
        try await refused(["\(lock)@hci1", "\(reader)@hci2", "--adapter", "hci3"], saying: "--adapter is for one device")
        try await refused(["\(lock)@hci1", "\(reader)@hci2", "--set", "variables.x=1"], saying: "--set is for one device")
        try await refused(["\(lock)@hci1", "--adapter", "hci2"], saying: "give the adapter once")
    }

    @Test func aRigHasOnePairingAgent() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("rig-args-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let pairing =
            #"{"format": 1, "device": {"name": "P"}, "security": {"io": "DisplayOnly"}, "services": [{"id": "s", "uuid": "180f", "characteristics": [{"id": "c", "uuid": "2a19", "flags": ["read"]}]}]}"#
        let a = folder.appendingPathComponent("a.json").path
        let b = folder.appendingPathComponent("b.json").path
        try pairing.write(toFile: a, atomically: true, encoding: .utf8)
        try pairing.write(toFile: b, atomically: true, encoding: .utf8)
        try await refused(["\(a)@hci1", "\(b)@hci2"], saying: "a, b each set how they pair")
    }

    @Test func aRigFileIsCheckedWithItsLocations() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("rig-file-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.copyItem(atPath: "\(Self.profiles)/noke-lock.json", toPath: folder.appendingPathComponent("lock.json").path)
        try FileManager.default.copyItem(
            atPath: "\(Self.profiles)/leaf-reader.json", toPath: folder.appendingPathComponent("reader.json").path)
        let rig = folder.appendingPathComponent("rig.json").path
        func write(_ text: String) throws { try text.write(toFile: rig, atomically: true, encoding: .utf8) }

        try write(#"{"devices": [{"profile": "lock.json", "adapter": "hci1"}, {"profile": "reader.json", "adapter": "usb0"}]}"#)
        try await refused(["--rig", rig], saying: "rig.json:1:")
        try await refused(["--rig", rig], saying: "devices[1].adapter: the device's adapter: hciN or its address")
        try write(#"{"devices": [{"profile": "lock.json", "adapter": "hci1"}, {"profile": "lock.json", "adapter": "hci2"}]}"#)
        try await refused(["--rig", rig], saying: "devices[1].id: \"lock\" is already")
        try write(#"{"devices": [{"profile": "lock.json", "adapter": "hci1"}], "devicez": []}"#)
        try await refused(["--rig", rig], saying: "devicez: unknown key")
        try write(
            #"{"devices": [{"id": "door", "profile": "lock.json", "adapter": "hci1"}, {"profile": "reader.json", "adapter": "hci2"}], "faults": [{"device": "gate", "on": "start", "disconnect": true}]}"#
        )
        try await refused(["--rig", rig], saying: "faults[0].device: no device \"gate\" (the rig has door, reader)")
        try write(
            #"{"devices": [{"id": "door", "profile": "lock.json", "adapter": "hci1"}, {"profile": "reader.json", "adapter": "hci2"}], "faults": [{"device": "reader", "on": "write", "characteristic": "tx", "drop": true}]}"#
        )
        try await refused(["--rig", rig], saying: "faults[0] (device reader).characteristic")
        try await refused(["--rig", rig, "\(Self.profiles)/bleproof.json"], saying: "not both")

        // A good rig file gets as far as bluetoothd (none on this bus: exit 1, not 2).
        try write(
            #"{"devices": [{"id": "door", "profile": "lock.json", "adapter": "hci1"}, {"profile": "reader.json", "adapter": "hci2"}], "faults": [{"device": "door", "on": "start", "after": 5000, "disconnect": true}]}"#
        )
        let run = try await GattemuCommand.run(["run", "--rig", rig, "--control", "off"], bus: "unix:path=/nonexistent")
        #expect(run.status == 1, "\(run.stderr)")
    }

    /// A rig's device may be a relayed real device: `gattemu relay`'s options as a `relay` object, checked with the
    /// rest of the file before anything connects.
    @Test func aRigsRelayIsCheckedWithTheFile() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("rig-relay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.copyItem(
            atPath: "\(Self.profiles)/leaf-reader.json", toPath: folder.appendingPathComponent("reader.json").path)
        let rig = folder.appendingPathComponent("rig.json").path
        func write(_ devices: String) throws {
            try #"{"devices": [{"profile": "reader.json", "adapter": "hci2"}, \#(devices)]}"#.write(
                toFile: rig, atomically: true, encoding: .utf8)
        }
        try write(#"{"adapter": "hci1", "relay": {"device": "F0:E0:D0:00:00:0D"}}"#)
        try await refused(["--rig", rig], saying: "devices[1].relay.upstreamAdapter: the adapter that connects to the device")
        try write(#"{"adapter": "hci1", "relay": {"device": "F0:E0:D0:00:00:0D", "upstreamAdapter": "hci1"}}"#)
        try await refused(["--rig", rig], saying: "relay.upstreamAdapter: the mirror's adapter: the device needs another")
        try write(#"{"adapter": "hci1", "relay": {"device": "F0:E0:D0:00:00:0D", "upstreamAdapter": "hci2"}}"#)
        try await refused(["--rig", rig], saying: "devices[1].relay.upstreamAdapter: adapter hci2 serves reader")
        try write(#"{"adapter": "hci1", "relay": {"device": "", "upstreamAdapter": "hci3"}}"#)
        try await refused(["--rig", rig], saying: "devices[1].relay.device: the device")
        try write(#"{"adapter": "hci1", "relay": {"device": "Lock*", "upstreamAdapter": "hci3", "scanTimeout": 0}}"#)
        try await refused(["--rig", rig], saying: "relay.scanTimeout: seconds")
        try write(#"{"adapter": "hci1", "relay": {"device": "Lock*", "upstreamAdapter": "hci3", "devicePairing": "maybe"}}"#)
        try await refused(["--rig", rig], saying: "relay.devicePairing: one of accept, refuse")
        try write(#"{"adapter": "hci1", "relay": {"device": "Lock*", "upstreamAdapter": "hci3", "ouput": "x.json"}}"#)
        try await refused(["--rig", rig], saying: "relay.ouput: unknown key")
        try write(#"{"adapter": "hci1", "profile": "reader.json", "relay": {"device": "Lock*", "upstreamAdapter": "hci3"}}"#)
        try await refused(["--rig", rig], saying: "devices[1]: a device is a profile or a relay, not both")
        // Where the session is written is checked before the device is looked for.
        try write(#"{"adapter": "hci1", "relay": {"device": "Lock*", "upstreamAdapter": "hci3", "output": "missing/x.json"}}"#)
        try await refused(["--rig", rig], saying: "missing/x.json")
        // A relay pairs on both of its legs: with another device that pairs, bluetoothd's one agent cannot serve both.
        let pairing =
            #"{"format": 1, "device": {"name": "P"}, "security": {"io": "DisplayOnly"}, "services": [{"id": "s", "uuid": "180f", "characteristics": [{"id": "c", "uuid": "2a19", "flags": ["read"]}]}]}"#
        try pairing.write(toFile: folder.appendingPathComponent("reader.json").path, atomically: true, encoding: .utf8)
        try write(#"{"adapter": "hci1", "relay": {"device": "Lock*", "upstreamAdapter": "hci3"}}"#)
        try await refused(["--rig", rig], saying: "reader, relay each set how they pair")

        // A good one gets as far as bluetoothd (none on this bus: exit 1, not 2), its failure named by the device.
        try FileManager.default.removeItem(atPath: folder.appendingPathComponent("reader.json").path)
        try FileManager.default.copyItem(
            atPath: "\(Self.profiles)/leaf-reader.json", toPath: folder.appendingPathComponent("reader.json").path)
        try write(#"{"id": "lock", "adapter": "hci1", "relay": {"device": "Lock*", "upstreamAdapter": "hci3", "output": "lock.json"}}"#)
        let run = try await GattemuCommand.run(["run", "--rig", rig, "--control", "off"], bus: "unix:path=/nonexistent")
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("lock: "), "\(run.stderr)")
    }

    @Test func aRigsScenarioNamesEachFaultsDevice() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("rig-scenario-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let scenario = folder.appendingPathComponent("scenario.json").path
        let lock = "\(Self.profiles)/noke-lock.json"
        let reader = "\(Self.profiles)/leaf-reader.json"
        try #"[{"on": "start", "after": 5000, "disconnect": true}]"#.write(toFile: scenario, atomically: true, encoding: .utf8)
        try await refused(["\(lock)@hci1", "\(reader)@hci2", "--scenario", scenario], saying: "faults[0].device: each fault")
        try #"{"faults": [{"device": "noke-lock", "on": "read", "characteristic": "data", "drop": true}]}"#.write(
            toFile: scenario, atomically: true, encoding: .utf8)
        try await refused(
            ["\(lock)@hci1", "\(reader)@hci2", "--scenario", scenario], saying: "faults[0] (device noke-lock).characteristic")
    }
}
