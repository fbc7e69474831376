import ArgumentParser
import BlueZ
import Control
import DBus
import Dispatch
import Emulator
import FoundationEssentials
import Logging
import NIOCore
import Profile
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What `run` and `relay` share: the event log, the control API, faults, and serving the device until SIGINT or
/// SIGTERM (``serve(_:loop:)``).
struct ServingOptions: ParsableArguments {
    @Option(help: "Console event format: text or json.")
    var logFormat: EventLog.Format = .text

    @Option(help: "Also write every event as JSON lines to this file.")
    var events: String?

    @Option(
        help: ArgumentHelp(
            "How many recent events to keep in memory for the control API, its event streams and the dashboard (100 to 100000).",
            valueName: "count"))
    var eventMemory: Int = EventLog.defaultCapacity

    @Option(help: "How notifications reach bluetoothd: acquire (AcquireNotify sockets) or properties (PropertiesChanged).")
    var notifyPath: NotifyPathArgument = .acquire

    @Option(help: "Seed for random values (same seed, same events → same bytes); default: a new one per run, printed at start.")
    var seed: UInt64?

    @Flag(help: "Exit (status 1) when bluetoothd goes away, instead of waiting for it and registering again.")
    var exitOnLoss = false

    @Flag(name: .shortAndLong, help: "Log more.")
    var verbose = false

    @Option(help: ArgumentHelp("Serve the control API on HOST:PORT, or 'off'.", valueName: "address"))
    var control = ControlEndpoint.default.description

    @Option(
        help: ArgumentHelp(
            "Bearer token every control request must carry, or 'none' (no token: any local user may drive gattemu). Default: a new one, in a file only you can read, that `gattemu ctl` finds. Visible to other users: prefer --control-token-file or $GATTEMU_CONTROL_TOKEN.",
            valueName: "token"))
    var controlToken: String?

    @Option(help: ArgumentHelp("Read the control token from the first line of this file (mode 600 or 400).", valueName: "file"))
    var controlTokenFile: String?

    @Option(
        help: ArgumentHelp(
            "Also accept this Host for the control API (repeatable): a name, or NAME:PORT for a tunnel or proxy on another port.",
            valueName: "name"))
    var controlAllowHost: [String] = []

    @Option(
        help: ArgumentHelp(
            "Let web pages of this origin call the control API (repeatable, exact, e.g. http://localhost:3000).", valueName: "origin"))
    var controlAllowOrigin: [String] = []

    @Option(
        help: ArgumentHelp(
            "Let the members of this group use the control API from this machine without the token (repeatable; the kernel says who connects): a tester's account for the packaged service.",
            valueName: "group"))
    var controlAllowGroup: [String] = []

    @Option(help: ArgumentHelp("Inject the faults of this JSON scenario file (see docs/control.md).", valueName: "file"))
    var scenario: String?

    /// Serves `profile` on `adapter` until SIGINT, SIGTERM or a fatal loss: the control API first (answering 503
    /// until the device has started), then the emulator.
    func serve(_ profile: DeviceProfile, adapter: String?, loop: DBusEventLoop? = nil) async throws {
        let device = ServedDevice(id: ControlDevices.id(forProfile: profile.file), profile: profile, adapter: adapter)
        try await serve([device], loop: loop)
    }

    /// Serves each device on its adapter, in one process on one D-Bus loop, with one event log and one control API
    /// (`gattemu run A@hci0 B@hci1`). With one device, events carry no device and a device that cannot start ends
    /// the run (exit 1); in a rig, a device that cannot start is reported (its state `failed`, with the reason, and
    /// an `error` event) and the others run on; the run ends when none started.
    func serve(_ served: [ServedDevice], loop: DBusEventLoop? = nil) async throws {
        let rig = served.count > 1
        let endpoint = try controlEndpoint()
        let environment = ProcessInfo.processInfo.environment
        var token = try endpoint == nil ? nil : resolvedControlToken()
        let makeTokenFile = endpoint != nil && token == nil && controlToken != Self.noToken
        if makeTokenFile {
            // Checked (and made) before anything starts: a folder someone else planted ends the run here.
            do {
                _ = try ControlTokenFile.prepareDirectory(environment: environment)
            } catch {
                throw Failure.runtime(error.message)
            }
            token = ControlTokenFile.newToken()
        }
        var access: ControlAccess
        do {
            access = try ControlAccess(allowedHosts: controlAllowHost, allowedOrigins: controlAllowOrigin)
        } catch {
            throw Failure.badInput(error.message)
        }
        for name in controlAllowGroup {
            guard let group = ControlAccess.groupID(name) else {
                throw Failure.badInput("--control-allow-group \(name): no such group on this machine")
            }
            access.allowedGroups.insert(group)
        }
        // One device: the scenario's faults are its own; a rig's scenario names each fault's device (RigScenario).
        let scenarioFaults: [String: [FaultSpec]] =
            rig
            ? try scenario.map { try RigScenario.load($0, devices: served) } ?? [:]
            : [served[0].id: try loadScenario(scenario, for: served[0].profile)]
        let faults = served.map { $0.profile.faults + $0.faults + (scenarioFaults[$0.id] ?? []) }
        guard EventLog.capacityRange.contains(eventMemory) else {
            throw Failure.badInput(
                "--event-memory \(eventMemory): keep \(EventLog.capacityRange.lowerBound) to \(EventLog.capacityRange.upperBound) events")
        }
        let log: EventLog
        do {
            log = try EventLog(format: logFormat, file: events, capacity: eventMemory)
        } catch {
            throw Failure.badInput("\(error)")
        }
        let seed = seed ?? UInt64.random(in: 0...UInt64(UInt32.max))
        let emulators: [Emulator]
        do {
            // One thread for every device's bus connection and actor: what crosses between them needs no hop.
            let shared = try loop ?? DBusEventLoop(name: "gattemu d-bus")
            emulators = try served.map { device throws(DBusError) in
                var options = EmulatorOptions(adapter: device.adapter)
                options.notifyPath = notifyPath.path
                options.seed = seed
                options.exitOnLoss = exitOnLoss
                if case .address(let address) = DBusBus.ofThisCommand { options.bus = .address(address) }
                return try Emulator(
                    profile: device.profile, options: options, log: DeviceEventLog(log, device: rig ? device.id : nil), loop: shared)
            }
        } catch {
            throw Failure.runtime("\(error)")
        }
        let devices = ControlDevices(
            zip(served, emulators).map { ControlDevices.Device(id: $0.id, profile: $0.profile.file, adapter: $0.adapter, target: $1) },
            events: log)
        let server: ControlServer?
        do {
            server = try endpoint.map { endpoint throws(ControlSetupError) in
                try ControlServer(endpoint: endpoint, token: token, devices: devices, access: access, ready: false)
            }
        } catch {
            throw Failure.badInput(error.message)
        }
        let signals = SignalWaiter([SIGINT, SIGTERM])
        // The first SIGINT or SIGTERM, whenever it comes: start-up races it (bluetoothd may take its D-Bus timeout
        // to answer a call, 25 s, or never come: a stop asked for meanwhile is not kept waiting), and so does the run.
        var stoppedWhileStarting: Int32?
        var controlTask: Task<Void, Never>?
        var tokenFile: String?
        defer { if let tokenFile, let token { ControlTokenFile.remove(path: tokenFile, token: token) } }
        do {
            // A relay's device answers through its mirror's emulator (attached before it starts).
            for (device, emulator) in zip(served, emulators) { await device.relay?.attach(to: emulator, log: log) }
            // The API listens first (a port in use fails before bluetoothd is touched) and answers 503 until
            // the device has started: whoever sees the device on air can use the API at once.
            if let server {
                controlTask = try await startControl(server, log: log)
                if makeTokenFile, let token { tokenFile = try writeTokenFile(token, server: server, environment: environment) }
            }
            // Every device starts at once; each outcome is kept (a rig's device that failed is reported, not fatal).
            let starting = Task {
                await withTaskGroup(of: (Int, String?).self) { group in
                    for (index, emulator) in emulators.enumerated() {
                        group.addTask {
                            do {
                                try await emulator.start()
                                return (index, nil)
                            } catch {
                                return (index, "\(error)")
                            }
                        }
                    }
                    var failures = [String?](repeating: nil, count: emulators.count)
                    for await (index, failure) in group { failures[index] = failure }
                    return failures
                }
            }
            // Whichever comes first; neither is waited for after (a start still waiting for bluetoothd is left to end
            // with the connection, which stopping closes).
            let race = await withCheckedContinuation { (continuation: CheckedContinuation<StartRace, Never>) in
                let answered = Answered()
                Task {
                    let failures = await starting.value
                    if answered.first() { continuation.resume(returning: .started(failures)) }
                }
                Task {
                    if let number = await signals.first(), answered.first() { continuation.resume(returning: .signal(number)) }
                }
            }
            switch race {
            case .started(let failures):
                if !rig, let failure = failures[0] {
                    log.record(EmulatorEvent(time: log.now, kind: .error, detail: "could not start: \(failure)"))
                    throw Failure.runtime(failure)
                }
                if failures.allSatisfy({ $0 != nil }) {
                    throw Failure.runtime(
                        "no device started: "
                            + zip(served, failures).map { "\($0.id): \($1 ?? "")" }.joined(separator: "; "))
                }
                for (index, emulator) in emulators.enumerated() {
                    let id = served[index].id
                    if let failure = failures[index] {
                        devices.set(id, .failed, reason: failure)
                        log.record(
                            EmulatorEvent(
                                time: log.now, kind: .error, detail: "could not start: \(failure); the other devices run on", device: id))
                        await emulator.stop()
                        continue
                    }
                    for spec in faults[index] { try await emulator.addFault(spec) }
                    devices.set(id, .running)
                }
                server?.readiness.markReady()
                if let server, let tokenFile, let token { announceToken(token, file: tokenFile, server: server) }
            case .signal(let number):
                // Stopped while starting: what was registered goes, the log says why, exit 0 (a unit stopped while
                // bluetoothd is slow is not a failure to restart for).
                starting.cancel()
                stoppedWhileStarting = number
            }
        } catch {
            controlTask?.cancel()
            await Self.stopAll(emulators)
            log.close()
            throw error as? Failure ?? Failure.runtime("\(error)")
        }
        let ending: Ending
        if let number = stoppedWhileStarting {
            ending = .signal(number)
            log.record(.note, detail: "signal \(number) while starting: shutting down")
        } else {
            ending = await withTaskGroup(of: Ending.self) { group in
                group.addTask { .signal(await signals.first() ?? 0) }
                for (index, emulator) in emulators.enumerated() where devices.state(of: served[index].id) == .running {
                    group.addTask {
                        for await reason in emulator.terminations { return .failure(rig ? "\(served[index].id): \(reason)" : reason) }
                        return .signal(0)
                    }
                }
                let first = await group.next() ?? .signal(0)
                group.cancelAll()
                return first
            }
            if case .signal(let number) = ending { log.record(.note, detail: "signal \(number): shutting down") }
        }
        // Stop first so event streams carry everything up to `stopped`, end them, then let the
        // control server finish its open responses.
        await Self.stopAll(emulators)
        for device in served where devices.state(of: device.id) == .running { devices.set(device.id, .stopped) }
        for (device, emulator) in zip(served, emulators) { await device.relay?.detach(from: emulator) }
        log.finishSubscriptions()
        controlTask?.cancel()
        await controlTask?.value
        log.close()
        if case .failure(let reason) = ending { throw Failure.runtime(reason) }
    }

    /// Stops every device at once (each unregisters what it registered).
    static func stopAll(_ emulators: [Emulator]) async {
        await withTaskGroup(of: Void.self) { group in
            for emulator in emulators { group.addTask { await emulator.stop() } }
        }
    }

    private enum Ending: Sendable {
        case signal(Int32)
        case failure(String)
    }

    private enum StartRace: Sendable {
        /// Each device's failure (nil: started).
        case started([String?])
        case signal(Int32)
    }

    /// True once: for the first of two racing tasks.
    private final class Answered: Sendable {
        private let done = Mutex(false)
        func first() -> Bool {
            done.withLock { done in
                defer { done = true }
                return !done
            }
        }
    }

    /// `--control`, checked before anything starts (bad input exits 2); nil for `off`.
    func controlEndpoint() throws -> ControlEndpoint? {
        if control == "off" { return nil }
        guard let endpoint = ControlEndpoint(parsing: control) else {
            throw Failure.badInput("--control \(control): expected HOST:PORT (e.g. 127.0.0.1:8765) or off")
        }
        if !endpoint.isLoopback, controlToken == nil || controlToken == Self.noToken, controlTokenFile == nil, Self.environmentToken == nil
        {
            throw Failure.badInput(
                "--control \(endpoint) is not a loopback address: give --control-token-file FILE (or $\(ControlToken.environmentVariable), or --control-token TOKEN)"
            )
        }
        return endpoint
    }

    /// The token from `--control-token`, `--control-token-file` or `$GATTEMU_CONTROL_TOKEN` (in that order;
    /// the two options together are refused); a token on the command line is warned about.
    func resolvedControlToken() throws -> String? {
        if controlToken != nil, controlTokenFile != nil {
            throw Failure.badInput("give --control-token or --control-token-file, not both")
        }
        if controlToken == Self.noToken {
            DescriptorOutput.writeError(
                "gattemu: warning: --control-token none: the control API asks for no token; every user and process of this machine can read the event log and drive gattemu\n"
            )
            return nil
        }
        if let controlToken {
            if controlToken.isEmpty { throw Failure.badInput("--control-token must not be empty") }
            DescriptorOutput.writeError(
                "gattemu: warning: --control-token is visible to other users of this machine (ps, /proc/PID/cmdline); prefer --control-token-file FILE or $\(ControlToken.environmentVariable)\n"
            )
            return controlToken
        }
        if let controlTokenFile {
            do {
                return try ControlToken.read(file: controlTokenFile, option: "--control-token-file")
            } catch {
                throw Failure.badInput(error.message)
            }
        }
        return Self.environmentToken
    }

    /// `--control-token none`: the explicit opt-out of the token.
    static let noToken = "none"

    /// Writes the token made for this run where `gattemu ctl` finds it (the bound port's file), as soon as the API
    /// listens.
    func writeTokenFile(_ token: String, server: ControlServer, environment: [String: String]) throws -> String {
        do {
            let written = try ControlTokenFile.writeSomewhere(
                token, port: server.boundPort ?? server.endpoint.port, environment: environment)
            if let instead = written.instead {
                DescriptorOutput.writeError(
                    "gattemu: \(instead)\ngattemu: the control token is in \(written.path) instead: gattemu ctl --control-token-file \(written.path)\n"
                )
            }
            return written.path
        } catch {
            throw Failure.runtime(error.message)
        }
    }

    /// Prints where the token is and the dashboard's address, once the device has started (a run that fails before
    /// then says only why, in one line), on standard error only: the event log never holds the token. On a terminal
    /// the address carries the token in its fragment (never sent to the server, nor in a `Referer`), for a click;
    /// anywhere else (a service's journal, a CI log, a file others may read) it does not.
    func announceToken(_ token: String, file path: String, server: ControlServer) {
        let host = ControlEndpoint.authority(
            server.endpoint.isWildcard ? "127.0.0.1" : server.endpoint.host, port: server.boundPort ?? server.endpoint.port)
        let dashboard =
            isatty(STDERR_FILENO) != 0
            ? "http://\(host)/#token=\(token)" : "http://\(host)/ (it asks for the token; not printed where it could be logged)"
        DescriptorOutput.writeError("gattemu: control API token in \(path) (gattemu ctl reads it); dashboard: \(dashboard)\n")
    }

    /// `$GATTEMU_CONTROL_TOKEN`, unless unset or empty.
    static var environmentToken: String? {
        ProcessInfo.processInfo.environment[ControlToken.environmentVariable].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Starts the control server and waits until it listens (or failed to).
    func startControl(_ server: ControlServer, log: EventLog) async throws -> Task<Void, Never> {
        let (ready, continuation) = AsyncStream.makeStream(of: Result<String, ControlSetupError>.self)
        var logger = Logger(label: "gattemu.control")
        logger.logLevel = verbose ? .info : .warning
        let task = Task {
            do {
                try await server.run(logger: logger) { continuation.yield(.success($0)) }
            } catch {
                let reason = (error as? IOError)?.reason ?? "\(error)"
                continuation.yield(.failure(ControlSetupError(message: "control API on \(server.endpoint): \(reason)")))
            }
            continuation.finish()
        }
        for await result in ready {
            switch result {
            case .success(let address):
                log.record(.note, detail: "control API on http://\(address)/v1" + (server.token == nil ? "" : " (token required)"))
                return task
            case .failure(let error):
                throw Failure.runtime(error.message)
            }
        }
        throw Failure.runtime("control API on \(server.endpoint) stopped before it started")
    }
}
