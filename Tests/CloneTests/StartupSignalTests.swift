import DBusTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// SIGTERM while `gattemu run` waits for bluetoothd (the name owned, no answer yet: each call would wait out D-Bus's
/// 25 s): it stops at once, exits 0 and says so, instead of exiting 1 when the call times out (a unit's stop then
/// ended in SIGKILL and left the token file behind).
@Suite struct StartupSignalTests {
    @Test(.timeLimit(.minutes(2))) func sigtermWhileBluetoothdDoesNotAnswerStopsCleanly() async throws {
        let bus = try PrivateBus()
        // bluetoothd that owns its name and never answers: dbus-python without a main loop reads nothing.
        let mute = try ChildProcess.spawn([
            "/usr/bin/python3", "-c",
            "import dbus, sys, time; b = dbus.bus.BusConnection(sys.argv[1]); b.request_name('org.bluez'); print('owned', flush=True); time.sleep(300)",
            bus.address,
        ])
        defer {
            kill(mute, SIGKILL)
            var status: Int32 = 0
            waitpid(mute, &status, 0)
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("startup-signal-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let profile = "\(folder)/p.json"
        try
            #"{"format": 1, "device": {"name": "Mute"}, "services": [{"id": "s", "uuid": "180f", "characteristics": [{"id": "c", "uuid": "2a19", "flags": ["read"]}]}]}"#
            .write(toFile: profile, atomically: true, encoding: .utf8)
        let events = "\(folder)/events.jsonl"
        // Started once org.bluez is owned (the daemon says so), so gattemu finds it and waits for its answer.
        let owned = try await eventually { (try? await Self.owner(bus.address)) != nil }
        try #require(owned, "the stand-in never owned org.bluez")
        let pid = try ChildProcess.spawn(
            [try GattemuCommand.binary, "run", profile, "--control", "127.0.0.1:0", "--control-token", "none", "--events", events],
            environment: ["GATTEMU_BUS_ADDRESS": bus.address, "XDG_RUNTIME_DIR": folder],
            files: { actions in
                posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
                posix_spawn_file_actions_addopen(&actions, 1, "\(folder)/out", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
                posix_spawn_file_actions_addopen(&actions, 2, "\(folder)/err", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            })
        // The control API is up before bluetoothd is asked anything: then gattemu is waiting for it.
        let waiting = try await eventually { ((try? String(contentsOfFile: events, encoding: .utf8)) ?? "").contains("control API on") }
        try #require(waiting, "gattemu never got as far as its control API")
        kill(pid, SIGTERM)
        let status: Int32 = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var status: Int32 = 0
                while waitpid(pid, &status, 0) != pid { guard errno == EINTR else { return continuation.resume(returning: -1) } }
                continuation.resume(returning: status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F))
            }
        }
        let log = (try? String(contentsOfFile: events, encoding: .utf8)) ?? ""
        let errors = (try? String(contentsOfFile: "\(folder)/err", encoding: .utf8)) ?? ""
        #expect(status == 0, "exit \(status): \(errors)\n\(log)")
        #expect(log.contains("signal 15 while starting: shutting down"), "\(log)")
    }

    /// The unique name owning `org.bluez` on the bus at `address`, asked with dbus-send.
    static func owner(_ address: String) async throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-send")
        process.arguments = [
            "--bus=\(address)", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
            "org.freedesktop.DBus.GetNameOwner", "string:org.bluez",
        ]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        guard process.terminationStatus == 0, let line = text.split(separator: "\n").last else { throw CocoaError(.fileNoSuchFile) }
        return String(line)
    }
}
