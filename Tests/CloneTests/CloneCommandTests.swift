import BlueZTestSupport
import DBusTestSupport
import Foundation
import Profile
import Testing

/// `gattemu clone` as a user runs it, against a private bus with the stand-in bluetoothd: exit 0 and a profile
/// that validates, 2 for bad input, 1 for what went wrong at run time, a one-line reason, never a crash.
@Suite struct CloneCommandTests {
    @Test(.timeLimit(.minutes(2))) func clonesToAFileThatValidatesAndReportsOnStandardOutput() async throws {
        let rig = try await Rig([Lock.peripheral()])
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("clone-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let run = try await GattemuCommand.run(
            ["clone", Lock.name, "--adapter", "hci0", "-o", output, "--listen", "0.3"], bus: rig.bus.address)
        #expect(run.status == 0, "\(run.stderr)")
        // The listening time is measured, so at least the 0.3 s asked for (more on a loaded machine), not exactly it.
        let summary =
            "cloned \(Lock.address) \"\(Lock.name)\" (public) on hci0: 1 services, 6 characteristics, 5 values read, 2 reads refused, 3 notifications in "
        #expect(run.stdout.hasPrefix(summary), "\(run.stdout)")
        let listened = run.stdout.dropFirst(summary.count).prefix { $0 != " " }
        #expect(Double(listened).map { $0 >= 0.3 && $0 < 60 } == true, "listened \(listened) s: \(run.stdout)")
        #expect(run.stdout.contains("profile written to \(output)"))
        #expect(
            run.stderr.contains("scanning on hci0") && run.stderr.contains("connecting to \(Lock.address)"),
            "progress on stderr: \(run.stderr)")
        let profile = try ProfileLoader.load(path: output)
        #expect(profile.characteristics.map(\.handle) == Lock.valueHandles.map(Optional.some))
    }

    @Test(.timeLimit(.minutes(2))) func withoutOutputTheProfileGoesToStandardOutputAndTheReportToStandardError() async throws {
        let rig = try await Rig([Lock.peripheral()])
        let run = try await GattemuCommand.run(["clone", Lock.address, "--adapter", "00:AA:01:01:00:01"], bus: rig.bus.address)
        #expect(run.status == 0, "\(run.stderr)")
        _ = try validated(run.stdout)
        #expect(run.stderr.contains("cloned \(Lock.address)"))
    }

    /// Each bad command line: exit 2 and its reason, before anything touches the bus.
    @Test(
        .timeLimit(.minutes(2)),
        arguments: [
            (["clone", "", "--adapter", "hci0"], "an empty name: not an address"),
            (["clone", "Lock\u{1B}[2J", "--adapter", "hci0"], "not an address"),
            (["clone", String(repeating: "x", count: 300), "--adapter", "hci0"], "1 to 248 bytes"),
            (["clone", "Lock-1", "--adapter", "hci0", "--listen=-1"], "--listen -1.0: 0 to 3600 seconds"),
            (["clone", "Lock-1", "--adapter", "hci0", "--listen", "nan"], "--listen nan"),
            (["clone", "Lock-1", "--adapter", "hci0", "--listen", "1e300"], "0 to 3600 seconds"),
            (["clone", "Lock-1", "--adapter", "hci0", "--scan-timeout", "0"], "--scan-timeout 0.0"),
            (["clone", "Lock-1", "--adapter", "hci0", "-o", "/nonexistent/dir/lock.json"], "cannot write in /nonexistent/dir"),
            (["clone", "Lock-1", "--adapter", "hci0", "-o", "/dev/null"], "exists and is not a regular file"),
            (["clone", "Lock-1"], "--adapter"),
            (["clone", "Lock-1", "--adapter", "hci0", "--timing", "sometimes"], "sometimes"),
        ])
    func badInputExitsTwo(_ arguments: [String], _ reason: String) async throws {
        // No bluetoothd at all: bad input is found before the bus is asked anything.
        let bus = try PrivateBus()
        let run = try await GattemuCommand.run(arguments, bus: bus.address)
        #expect(run.status == 2, "\(arguments): \(run.stderr)")
        #expect(run.stderr.contains(reason), "\(run.stderr)")
        #expect(run.stdout.isEmpty)
    }

    @Test(.timeLimit(.minutes(2))) func runtimeFailuresExitOneWithAOneLineReason() async throws {
        var vanishing = Lock.peripheral(address: "D0:1F:A6:00:00:07", name: "Vanishing")
        vanishing.services[0].characteristics[2].onRead = .vanishes
        let rig = try await Rig([Lock.peripheral(), vanishing])
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("clone-\(UUID().uuidString).json").path
        let cases: [([String], String)] = [
            (
                ["clone", "Nobody", "--adapter", "hci0", "--scan-timeout", "1"],
                "gattemu: no device named \"Nobody\" seen on hci0 within 1 s ("
            ),
            (["clone", Lock.name, "--adapter", "hci7"], "gattemu: adapter hci7 not found"),
            (
                ["clone", "Vanishing", "--adapter", "hci0", "-o", output],
                "gattemu: lost D0:1F:A6:00:00:07 before the clone was complete: bluetoothd removed it after 3 of 6 characteristics were read"
            ),
        ]
        for (arguments, reason) in cases {
            let run = try await GattemuCommand.run(arguments, bus: rig.bus.address)
            #expect(run.status == 1, "\(arguments): \(run.stderr)")
            #expect(run.stderr.split(separator: "\n").last.map(String.init)?.hasPrefix(reason) == true, "\(run.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: output), "nothing is written for a device lost mid-walk")

        let empty = try PrivateBus()
        let run = try await GattemuCommand.run(["clone", Lock.name, "--adapter", "hci0"], bus: empty.address)
        #expect(run.status == 1)
        #expect(run.stderr == "gattemu: org.bluez not on the system bus: is bluetoothd running?\n", "\(run.stderr)")
    }

    @Test(.timeLimit(.minutes(2))) func aHostileDeviceClonesIntoABoundedValidProfile() async throws {
        let rig = try await Rig([CloneHostileInputTests.hostile()])
        let run = try await GattemuCommand.run(
            ["clone", CloneHostileInputTests.address, "--adapter", "hci0", "--listen", "0.2"], bus: rig.bus.address)
        #expect(run.status == 0, "\(run.stderr.suffix(1500))")
        _ = try validated(run.stdout)
        #expect(run.stderr.utf8.count < 20_000, "the report is bounded: \(run.stderr.utf8.count) bytes")
        #expect(!run.stderr.contains("\u{1B}"), "no terminal escapes from the device reach the terminal")
    }
}
