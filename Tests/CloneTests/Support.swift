import BlueZ
import BlueZTestSupport
import Bluetooth
import DBus
import DBusTestSupport
import Foundation
import Profile
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A lock as the stand-in bluetoothd shows it to a central: a Noke-like service with a write, a notify, a
/// readable session with a user description, a characteristic that wants pairing, one that indicates
/// (StartNotify only) and one whose read the device answers with an application error.
enum Lock {
    static let address = "D0:1F:A6:44:B3:6F"
    static let name = "Lock-1"
    static func uuid(_ n: Int) -> String { "1bc5000\(n)-0200-d29e-e511-446c609db825" }
    static let service = uuid(1), rx = uuid(2), tx = uuid(3), session = uuid(4), secret = uuid(5), status = uuid(6), broken = uuid(7)
    static let sessionValue: [UInt8] = Array(0..<20)
    /// Value handles as the device has them (declaration + 1).
    static let valueHandles: [AttributeHandle] = [0x0012, 0x0014, 0x0017, 0x001A, 0x001C, 0x001F]

    static func peripheral(address: String = address, name: String = name) -> RemotePeripheral {
        var lock = RemotePeripheral(address: address, name: name)
        lock.uuids = [service]
        lock.manufacturerData = [0xFFFF: [0x40, 0x02, 0x0A]]
        lock.advertisingFlags = [0x06]
        lock.advertisingData = [0x24: [0xAB]]
        var tx = RemoteCharacteristic(
            uuid: Self.tx, flags: ["notify"], handle: 0x0013, descriptors: [RemoteDescriptor(uuid: "2902", handle: 0x0015)])
        tx.notifications = [(.zero, [0x51, 0x60]), (.zero, [0x51, 0x61])]
        var secret = RemoteCharacteristic(uuid: Self.secret, flags: ["read"], handle: 0x0019, value: [0xEE])
        secret.readError = .named("org.bluez.Error.NotPermitted", message: "Not paired")
        var status = RemoteCharacteristic(
            uuid: Self.status, flags: ["read", "indicate"], handle: 0x001B, value: [0x01],
            descriptors: [RemoteDescriptor(uuid: "2902", handle: 0x001D)])
        status.acquirable = false
        status.notifications = [(.zero, [0x02])]
        var broken = RemoteCharacteristic(uuid: Self.broken, flags: ["read"], handle: 0x001E)
        broken.readError = .named("org.bluez.Error.Failed", message: "Operation failed with ATT error: 0x80")
        lock.services = [
            RemoteService(
                uuid: service, handle: 0x0010,
                characteristics: [
                    RemoteCharacteristic(uuid: rx, flags: ["write-without-response", "write"], handle: 0x0011),
                    tx,
                    RemoteCharacteristic(
                        uuid: session, flags: ["read"], handle: 0x0016, value: sessionValue,
                        descriptors: [
                            RemoteDescriptor(uuid: "2901", handle: 0x0018, value: Array("Session".utf8))
                        ]),
                    secret, status, broken,
                ])
        ]
        return lock
    }
}

/// A private bus with a stand-in bluetoothd whose adapter `hci0` can discover `peripherals`.
struct Rig {
    let bus: PrivateBus
    let bluetoothd: StandInBluetoothd
    let adapter: StandInAdapter

    init(_ peripherals: [RemotePeripheral], configuration: StandInBluetoothd.Configuration = .init()) async throws {
        bus = try PrivateBus()
        bluetoothd = try await StandInBluetoothd(bus: bus, configuration: configuration)
        adapter = try await bluetoothd.addAdapter()
        for peripheral in peripherals { try await adapter.addDevice(peripheral) }
    }

    /// Records `query` with the recorder, as `gattemu clone` does (a short settle time; the scan ends once the device
    /// is found, its minute is for a loaded machine).
    func record(
        _ query: String, listen: Duration = .zero, settle: Duration = .milliseconds(200), readTimeout: Duration = .seconds(10)
    ) async throws -> CentralRecording {
        var options = DeviceRecorder.Options()
        options.readTimeout = readTimeout
        options.scanTimeout = .seconds(60)
        options.settle = settle
        options.listen = listen
        let query = try #require(DeviceQuery(parsing: query))
        let stack = try await BlueZStack.connect(bus: .address(bus.address))
        do {
            let recording = try await DeviceRecorder.record(query, adapter: try await stack.adapter("hci0"), options: options)
            await stack.close()
            return recording
        } catch {
            await stack.close()
            throw error
        }
    }
}

/// Loads a generated profile, showing it when it does not validate.
func validated(_ text: String) throws -> DeviceProfile {
    do {
        return try ProfileLoader.load(json: text, file: "clone.json")
    } catch {
        Issue.record("the cloned profile does not validate:\n\(error)\n\(text.prefix(4000))")
        throw error
    }
}

/// `gattemu` as built next to the tests, run against a private bus.
enum GattemuCommand {
    struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static var binary: String {
        get throws {
            let candidates = [
                URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("gattemu").path,
                URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                    .appendingPathComponent(".build/debug/gattemu").path,
            ]
            return try #require(
                candidates.first { FileManager.default.isExecutableFile(atPath: $0) },
                "gattemu is not built next to the tests (swift build --build-tests)")
        }
    }

    /// Runs `gattemu ARGUMENTS` with `GATTEMU_BUS_ADDRESS` = `bus` and waits for it (off the concurrency pool).
    static func run(_ arguments: [String], bus: String) async throws -> Outcome {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gattemu-clone-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("stdout").path
        let err = directory.appendingPathComponent("stderr").path
        let pid = try ChildProcess.spawn(
            [try binary] + arguments, environment: ["GATTEMU_BUS_ADDRESS": bus],
            files: { actions in
                posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
                posix_spawn_file_actions_addopen(&actions, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
                posix_spawn_file_actions_addopen(&actions, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            })
        let status: Int32 = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var status: Int32 = 0
                while waitpid(pid, &status, 0) != pid {
                    guard errno == EINTR else { return continuation.resume(returning: -1) }
                }
                // Killed by a signal (a crash) is not an exit code.
                continuation.resume(returning: status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F))
            }
        }
        return Outcome(
            status: status, stdout: (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
    }
}
