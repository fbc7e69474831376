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
import TextEscaping

#if canImport(Glibc)
    import Glibc
#endif

/// Run a profile: advertise it and answer centrals until SIGINT or SIGTERM.
struct Run: AsyncParsableCommand {
    // Names given, not derived: deriving one costs a scan of every protocol conformance in the binary.
    static let configuration = CommandConfiguration(
        commandName: "run", abstract: "Emulate the peripheral a profile describes until SIGINT or SIGTERM.")

    @Argument(
        help: ArgumentHelp(
            "The profile (JSON) to run; several as PROFILE@ADAPTER (hciN or an address) run as one rig, each on its adapter.",
            valueName: "profile[@adapter]"))
    var profiles: [String] = []

    @Option(
        help: ArgumentHelp(
            "Run the devices of a rig file: {\"devices\": [{\"id\", \"profile\", \"adapter\"}], \"faults\": [{\"device\", …}]} (docs/rig.md).",
            valueName: "file"))
    var rig: String?

    @Option(help: "Adapter to use: hciN or its address (default: the first one).")
    var adapter: String?

    @Option(
        name: .customLong("set"), help: ArgumentHelp("Override a profile value, e.g. variables.hardwareCode=2P.", valueName: "path=value"))
    var overrides: [String] = []

    @Flag(help: "Let `extends` read profiles outside this profile's folder (absolute paths, `..`, symlinks).")
    var allowExtendsOutside = false

    @OptionGroup var serving: ServingOptions

    func run() async throws {
        guard let rig else { return try await serving.serve(try servedDevices()) }
        guard profiles.isEmpty else { throw Failure.badInput("give the profiles or --rig FILE, not both") }
        if adapter != nil || !overrides.isEmpty { throw Failure.badInput("--adapter and --set are for one device, not a rig file's") }
        let file = try RigFile.load(rig)
        // Each profile loaded once, before anything connects (a relay's comes from its device).
        var profiles: [String: DeviceProfile] = [:]
        for entry in file.entries {
            if let path = entry.profile {
                profiles[entry.id] = try loadProfile(path, overrides: [], allowExtendsOutside: allowExtendsOutside)
            }
        }
        try Self.checkPairing(file.entries.map { ($0.id, profiles[$0.id]) })
        guard file.entries.contains(where: { $0.relay != nil }) else {
            return try await serving.serve(try rigDevices(file, rig: rig, profiles: profiles))
        }
        for relay in file.entries.compactMap(\.relay) { try relay.check() }
        // The relays connect to their devices first (their mirrors' profiles come from the devices), on the loop every
        // device of the rig runs on.
        let loop: DBusEventLoop
        do {
            loop = try DBusEventLoop(name: "gattemu d-bus")
        } catch {
            throw Failure.runtime("\(error)")
        }
        var relayed: [String: RelayedDevice] = [:]
        do {
            for entry in file.entries {
                guard let relay = entry.relay else { continue }
                let id = entry.id
                let say: @Sendable (String) -> Void = { line in
                    DescriptorOutput.writeError("gattemu: relay \(id): \(TerminalText.escaped(line))\n")
                }
                do {
                    relayed[id] = try await relay.start(on: loop, say: say)
                } catch let failure as Failure {
                    throw failure.prefixed("\(id): ")
                }
            }
            try await serving.serve(try rigDevices(file, rig: rig, profiles: profiles, relayed: relayed), loop: loop)
        } catch {
            for device in relayed.values { try? await device.finish(failed: true) }
            throw error
        }
        var failure: (any Error)?
        for entry in file.entries {
            guard let device = relayed[entry.id] else { continue }
            do {
                try await device.finish()
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
    }

    /// A rig file's devices: each entry's loaded profile (`profiles`, by id) or its relay's mirror (connected already),
    /// the file's faults decoded against them.
    func rigDevices(
        _ file: RigFile, rig: String, profiles: [String: DeviceProfile], relayed: [String: RelayedDevice] = [:]
    ) throws -> [ServedDevice] {
        var devices = try file.entries.map { entry in
            if let device = relayed[entry.id] {
                return ServedDevice(id: entry.id, profile: device.profile, adapter: device.adapter, relay: device)
            }
            guard let profile = profiles[entry.id] else { throw Failure.runtime("\(entry.id): the relay did not start") }
            return ServedDevice(id: entry.id, profile: profile, adapter: entry.adapter)
        }
        let faults = try RigScenario.decode(file.faults, file: rig, devices: devices)
        for index in devices.indices { devices[index].faults = faults[devices[index].id] ?? [] }
        return devices
    }

    /// The devices the arguments name, checked before anything starts (bad input exits 2).
    func servedDevices() throws -> [ServedDevice] {
        guard !profiles.isEmpty else { throw Failure.badInput("give a profile to run (or --rig FILE)") }
        if profiles.count == 1 {
            let (file, named) = ServedDevice.split(profiles[0])
            if named != nil, adapter != nil { throw Failure.badInput("\(profiles[0]): give the adapter once (@ADAPTER or --adapter)") }
            let profile = try loadProfile(file, overrides: overrides, allowExtendsOutside: allowExtendsOutside)
            return [ServedDevice(id: ControlDevices.id(forProfile: file), profile: profile, adapter: named ?? adapter)]
        }
        if adapter != nil { throw Failure.badInput("--adapter is for one device: give each profile its adapter as PROFILE@ADAPTER") }
        if !overrides.isEmpty { throw Failure.badInput("--set is for one device: a rig's profiles are run as they are") }
        let parts = profiles.map(ServedDevice.split)
        var adapters: [String: String] = [:]
        for (argument, part) in zip(profiles, parts) {
            guard let adapter = part.adapter else {
                throw Failure.badInput("\(argument): with several devices, give each its adapter as PROFILE@ADAPTER (hciN or an address)")
            }
            if let other = adapters[adapter] {
                throw Failure.badInput("\(argument): adapter \(adapter) is already \(other)'s (one device per adapter)")
            }
            adapters[adapter] = argument
        }
        let ids = ServedDevice.distinct(parts.map { ControlDevices.id(forProfile: $0.profile) })
        let devices = try zip(ids, parts).map { id, part in
            ServedDevice(
                id: id, profile: try loadProfile(part.profile, overrides: [], allowExtendsOutside: allowExtendsOutside),
                adapter: part.adapter)
        }
        try Self.checkPairing(devices.map { ($0.id, $0.profile) })
        return devices
    }

    /// bluetoothd has one pairing agent for all its adapters: a rig may have one device with pairing settings, and
    /// a relay (nil profile: its agent answers for both of its legs) counts as one.
    static func checkPairing(_ devices: [(id: String, profile: DeviceProfile?)]) throws {
        let pairing = devices.filter { $0.profile == nil || $0.profile?.pairingSecurity != nil }
        if pairing.count > 1 {
            throw Failure.badInput(
                "\(pairing.map(\.id).joined(separator: ", ")) each set how they pair (a relay pairs on both of its legs): bluetoothd has one pairing agent for all its adapters, so a rig may have one device with pairing settings (docs/rig.md)"
            )
        }
    }
}

/// Faults of a scenario file (`[...]` or `{"faults": [...]}`), checked against the profile; bad files exit 2.
func loadScenario(_ path: String?, for profile: DeviceProfile) throws -> [FaultSpec] {
    guard let path else { return [] }
    let root = try readJSONFile(path, what: "scenario").root
    do {
        let specs = try FaultSpecDecoder.scenario(root)
        for (index, spec) in specs.enumerated() {
            if let problem = profile.problem(with: spec) { throw Failure.badInput("\(path): faults[\(index)].\(problem.description)") }
        }
        return specs
    } catch let error as FaultSpecError {
        let location = error.location.map { "\($0): " } ?? "\(path): "
        throw Failure.badInput(location + error.description)
    }
}

enum NotifyPathArgument: String, ExpressibleByArgument, CaseIterable {
    case acquire, properties

    var path: GattNotifyPath { self == .acquire ? .acquireNotify : .propertiesChanged }
}

extension EventLog.Format: ExpressibleByArgument {}

/// The first of a set of signals, without a C handler (dispatch sources): kept once it came, so that each stage
/// of a run (starting, serving) may wait for it, and a wait that is cancelled ends (nil) without losing it.
///
/// `@unchecked Sendable`: `sources` is written once in `init` and only kept alive afterwards; the rest is in `state`.
final class SignalWaiter: @unchecked Sendable {
    private struct State {
        var signal: Int32?
        var waiters: [Int: CheckedContinuation<Int32?, Never>] = [:]
        var nextWaiter = 0
    }

    private let state = Mutex(State())
    private var sources: [any DispatchSourceSignal] = []

    init(_ numbers: [Int32]) {
        sources = numbers.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in self?.deliver(number) }
            source.resume()
            return source
        }
    }

    private func deliver(_ number: Int32) {
        let waiting = state.withLock { state -> [CheckedContinuation<Int32?, Never>] in
            if state.signal == nil { state.signal = number }
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiting { waiter.resume(returning: number) }
    }

    /// The first signal (at once if it already came); nil when the waiting task is cancelled first.
    func first() async -> Int32? {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Int32?, Never>) in
                let now = state.withLock { state -> Int32?? in
                    if let signal = state.signal { return .some(signal) }
                    if Task.isCancelled { return .some(nil) }
                    state.waiters[id] = continuation
                    return .none
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: nil)
        }
    }
}
