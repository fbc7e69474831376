// gattemu-hostbench: profiles a release `gattemu run` on the host, without Bluetooth.
//
// Starts a private dbus-daemon, stands in for bluetoothd on it (Tests/BlueZTestSupport: owns org.bluez, one
// adapter, the GATT and advertising managers), starts gattemu against it and drives write → notification round trips the way
// bluetoothd does (WriteValue on rx; the answer arrives on the AcquireNotify socket or as PropertiesChanged).
// Prints start-up time, gattemu's CPU per operation, notification burst rate and VmHWM.
// See benchmarks/README.md ("Profiling on the host"); run it with `scripts/bench --host`.
import BlueZTestSupport
import DBus
import DBusTestSupport
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

struct Options {
    var gattemu = ".build/release/gattemu"
    var profile = "benchmarks/profiles/noke-burst.json"
    var ops = 2000
    var warmup = 50
    var bursts = 8
    var burstSize = 250
    var notifyPaths = ["acquire", "properties"]
    /// A command prefix for gattemu, e.g. `/usr/bin/time -v`.
    var wrap: [String] = []
    var log = "/tmp/gattemu-hostbench.log"
    var extra: [String] = []
    /// Measure a peer emulator of benchmarks/peers instead of gattemu (`bless`, `bluez-peripheral`).
    var peer: String?
    var python = (ProcessInfo.processInfo.environment["GATTEMU_VENV"] ?? "/var/cache/gattemu/venv") + "/bin/python"

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var rest = arguments[...]
        func value() -> String {
            guard let next = rest.popFirst() else { fatal("missing value after \(arguments[arguments.count - rest.count - 1])") }
            return next
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--gattemu": options.gattemu = value()
            case "--profile": options.profile = value()
            case "--ops": options.ops = Int(value()) ?? options.ops
            case "--warmup": options.warmup = Int(value()) ?? options.warmup
            case "--bursts": options.bursts = Int(value()) ?? options.bursts
            case "--notify-path": options.notifyPaths = value().split(separator: ",").map(String.init)
            case "--wrap": options.wrap = value().split(separator: " ").map(String.init)
            case "--quick":
                options.ops = 300
                options.bursts = 2
            case "--log": options.log = value()
            case "--peer":
                options.peer = value()
                options.notifyPaths = ["properties"]
                options.bursts = 0  // bless stops answering after a burst (benchmarks/README.md)
            case "--":
                options.extra = Array(rest)
                rest = []
            case "-h", "--help":
                print(
                    """
                    gattemu-hostbench [--gattemu PATH] [--profile FILE] [--ops N] [--warmup N] [--bursts N]
                                      [--notify-path acquire,properties] [--wrap 'CMD ARGS'] [--quick] [--log FILE]
                                      [--peer bless|bluez-peripheral] [-- GATTEMU ARGS]
                    """)
                exit(0)
            default: fatal("unknown argument \(argument)")
            }
        }
        return options
    }
}

func fatal(_ message: String) -> Never {
    FileHandle.standardError.write(Data("hostbench: \(message)\n".utf8))
    exit(1)
}

// MARK: The process under test

/// utime + stime of `pid` in seconds, from /proc.
func cpuSeconds(_ pid: pid_t) -> Double {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = text.lastIndex(of: ")")
    else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// A field of /proc/PID/status in KiB (VmHWM, VmRSS).
func statusKiB(_ pid: pid_t, _ field: String) -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
        return Int(line.dropFirst(field.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
    }
    return nil
}

func spawn(_ arguments: [String], environment: [String: String], output: String) -> pid_t {
    do {
        return try ChildProcess.spawn(arguments, environment: environment) { (actions: inout posix_spawn_file_actions_t) in
            posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
    } catch {
        fatal("cannot start \(arguments[0]): \(String(cString: strerror(error.code)))")
    }
}

// MARK: The stand-in bluetoothd

/// The options bluetoothd 5.66 sends with WriteValue and AcquireNotify.
let bluetoothdOptions = StandInBluetoothd.options()

/// Where notifications of one characteristic arrive: an AcquireNotify socket or PropertiesChanged signals.
final class NotificationSink: Sendable {
    private let descriptor: Int32?
    private let signals = Mutex<(arrived: Int, waiter: (target: Int, continuation: CheckedContinuation<Void, Never>)?)>((0, nil))
    private let consumed = Mutex(0)

    init(socket: DBusFileDescriptor) {
        descriptor = socket.takeRawValue()
    }

    init() {
        descriptor = nil
    }

    /// Counts one PropertiesChanged with a Value.
    func signalArrived() {
        let resume = signals.withLock { state -> CheckedContinuation<Void, Never>? in
            state.arrived += 1
            guard let waiter = state.waiter, state.arrived >= waiter.target else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        resume?.resume()
    }

    /// Waits until `count` more notifications have arrived.
    func receive(_ count: Int) async {
        if let descriptor {
            var buffer = [UInt8](repeating: 0, count: 1024)
            var received = 0
            while received < count {
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 10_000) == 1 else { fatal("no notification on the socket within 10 s") }
                if recv(descriptor, &buffer, buffer.count, 0) > 0 { received += 1 }
            }
            return
        }
        let target = consumed.withLock {
            $0 += count
            return $0
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = signals.withLock { state -> Bool in
                if state.arrived >= target { return true }
                state.waiter = (target, continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }
}

// MARK: One run

struct Figures {
    var path: String
    var startMilliseconds = 0.0
    var phases: [(name: String, ops: Int, cpuMicroseconds: Double, wallMicroseconds: Double)] = []
    var burstPerSecond = 0.0
    var burstCPUMicroseconds = 0.0
    var hwmKiB = 0
    var rssKiB = 0
}

func measure(notifyPath: String, options: Options) async throws -> Figures {
    var figures = Figures(path: notifyPath)
    let bus = try PrivateBus()
    defer { bus.stop() }
    let standIn = try await StandInBluetoothd.withAdapter(bus)
    let arguments: [String]
    if let peer = options.peer {
        let script = "benchmarks/peers/\(peer.replacingOccurrences(of: "-", with: "_"))_peer.py"
        arguments = options.wrap + [options.python, script, "--profile", "noke", "--adapter", "hci0", "--address", "00:AA:01:01:00:01"]
    } else {
        // The control API is on, as by default, on a port of its own (a leftover gattemu may hold 8765).
        // The bench profile extends ../../profiles/noke-lock.json, outside its own folder.
        arguments =
            options.wrap + [
                options.gattemu, "run", options.profile, "--allow-extends-outside", "--notify-path", notifyPath, "--control", "127.0.0.1:0",
            ]
            + options.extra
    }
    let started = ContinuousClock.now
    let pid = spawn(
        arguments, environment: ["GATTEMU_BUS_ADDRESS": bus.address, "DBUS_SYSTEM_BUS_ADDRESS": bus.address], output: options.log)
    defer {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
    func advertisementRegistered() -> ContinuousClock.Instant? {
        standIn.registrationCalls.first { $0.kind == .advertisement && $0.register && $0.error == nil }?.at
    }
    while advertisementRegistered() == nil {
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid { fatal("\(arguments[0]) exited before it advertised; see \(options.log)") }
        if ContinuousClock.now - started > .seconds(options.wrap.isEmpty ? 20 : 120) {
            fatal("\(arguments[0]) did not register an advertisement; see \(options.log)")
        }
        try await Task.sleep(for: .milliseconds(1))
    }
    if let registered = advertisementRegistered() {
        let elapsed = registered - started
        figures.startMilliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    }
    guard let application = standIn.applications.first else { fatal("no GATT application registered") }
    let (owner, appPath) = (application.owner, application.path)
    var paths: [String: DBusObjectPath] = [:]
    for (path, interfaces) in try await standIn.managedObjects(owner, appPath) {
        if let uuid = interfaces[StandInBluetoothd.Names.gattCharacteristic]?["UUID"]?.string { paths[uuid] = path }
    }
    guard let rx = paths["1bc50002-0200-d29e-e511-446c609db825"], let tx = paths["1bc50003-0200-d29e-e511-446c609db825"] else {
        fatal("the profile has no Noke rx/tx characteristics")
    }
    let sink: NotificationSink
    if notifyPath == "acquire" {
        let reply = try await standIn.connection.call(
            destination: owner, path: tx, interface: StandInBluetoothd.Names.gattCharacteristic, member: "AcquireNotify",
            arguments: [bluetoothdOptions])
        guard let socket = reply.first?.unixFD else { fatal("AcquireNotify returned no socket") }
        sink = NotificationSink(socket: socket)
    } else {
        let signalSink = NotificationSink()
        sink = signalSink
        _ = try await standIn.connection.subscribe(
            to: DBusMatchRule(
                path: tx, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")
        ) { signal in
            if signal.arguments.dropFirst().first?.stringKeyedDictionary?["Value"] != nil { signalSink.signalArrived() }
        }
        _ = try await standIn.connection.call(
            destination: owner, path: tx, interface: StandInBluetoothd.Names.gattCharacteristic, member: "StartNotify")
    }

    let command: [UInt8] = [0x7e, 0x00, 0x42] + [UInt8](repeating: 0x11, count: 17)
    func writeRequest() async throws {
        _ = try await standIn.connection.call(
            destination: owner, path: rx, interface: StandInBluetoothd.Names.gattCharacteristic, member: "WriteValue",
            arguments: [.bytes(command), bluetoothdOptions])
    }
    func writeCommand(_ value: [UInt8]) async throws {
        try await standIn.connection.callWithoutReply(
            destination: owner, path: rx, interface: StandInBluetoothd.Names.gattCharacteristic, member: "WriteValue",
            arguments: [.bytes(value), bluetoothdOptions])
    }
    func phase(_ name: String, ops: Int, _ body: () async throws -> Void) async throws {
        let cpu = cpuSeconds(pid)
        let wall = ContinuousClock.now
        try await body()
        let elapsed = ContinuousClock.now - wall
        let used = cpuSeconds(pid) - cpu
        let wallSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        figures.phases.append((name, ops, used * 1e6 / Double(ops), wallSeconds * 1e6 / Double(ops)))
    }

    for _ in 0..<options.warmup {
        try await writeRequest()
        await sink.receive(1)
    }
    try await phase("write-req", ops: options.ops) {
        for _ in 0..<options.ops {
            try await writeRequest()
            await sink.receive(1)
        }
    }
    try await phase("write-cmd", ops: options.ops) {
        for _ in 0..<options.ops {
            try await writeCommand(command)
            await sink.receive(1)
        }
    }
    if options.bursts > 0 {
        try await phase("burst", ops: options.bursts * options.burstSize) {
            for index in 0..<options.bursts {
                try await writeCommand([0xB0, UInt8(truncatingIfNeeded: index)])
                await sink.receive(options.burstSize)
            }
        }
        if let burst = figures.phases.last {
            figures.burstPerSecond = 1e6 / burst.wallMicroseconds
            figures.burstCPUMicroseconds = burst.cpuMicroseconds
        }
    }
    figures.hwmKiB = statusKiB(pid, "VmHWM") ?? 0
    figures.rssKiB = statusKiB(pid, "VmRSS") ?? 0
    await standIn.connection.close()
    return figures
}

// MARK: Main

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
let subject = options.peer.map { "peer \($0) (\(options.python))" } ?? "\(options.gattemu) \(options.profile)"
guard FileManager.default.isExecutableFile(atPath: options.peer == nil ? options.gattemu : options.python) else {
    fatal(
        options.peer == nil ? "\(options.gattemu) is missing: swift build -c release" : "\(options.python) is missing: benchmarks/bootstrap"
    )
}
try? FileManager.default.removeItem(atPath: options.log)
print(
    "host profile: \(subject), \(options.ops) ops per loop, \(options.bursts) bursts of \(options.burstSize)"
        + (options.wrap.isEmpty ? "" : ", under \(options.wrap.joined(separator: " "))"))
print(
    "| subject, notify path | start → adv registered ms | write-req CPU µs/op | write-req wall µs/op | write-cmd CPU µs/op | write-cmd wall µs/op | burst notifications/s | burst CPU µs/notification | VmHWM KiB | VmRSS KiB |"
)
print("|---|---|---|---|---|---|---|---|---|---|")
for path in options.notifyPaths {
    let figures = try await measure(notifyPath: path, options: options)
    let request = figures.phases.first { $0.name == "write-req" }
    let command = figures.phases.first { $0.name == "write-cmd" }
    func f(_ value: Double?, _ digits: Int = 1) -> String { value.map { String(format: "%.\(digits)f", $0) } ?? "–" }
    print(
        "| \(options.peer ?? "gattemu") \(path) | \(f(figures.startMilliseconds)) | \(f(request?.cpuMicroseconds)) | \(f(request?.wallMicroseconds)) | "
            + "\(f(command?.cpuMicroseconds)) | \(f(command?.wallMicroseconds)) | \(f(figures.burstPerSecond, 0)) | "
            + "\(f(figures.burstCPUMicroseconds)) | \(figures.hwmKiB) | \(figures.rssKiB) |")
}
