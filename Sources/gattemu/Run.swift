import ArgumentParser
import BlueZ
import Dispatch
import Emulator
import Foundation
import Profile

/// Run a profile: advertise it and answer centrals until SIGINT or SIGTERM.
struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Emulate the peripheral a profile describes until SIGINT or SIGTERM.")

    @Argument(help: "The profile (JSON) to run.")
    var profile: String

    @Option(help: "Adapter to use: hciN or its address (default: the first one).")
    var adapter: String?

    @Option(name: .customLong("set"), help: ArgumentHelp("Override a profile value, e.g. variables.hardwareCode=2P.", valueName: "path=value"))
    var overrides: [String] = []

    @Option(help: "Console event format: text or json.")
    var logFormat: EventLog.Format = .text

    @Option(help: "Also write every event as JSON lines to this file.")
    var events: String?

    @Option(help: "How notifications reach bluetoothd: acquire (AcquireNotify sockets) or properties (PropertiesChanged).")
    var notifyPath: NotifyPathArgument = .acquire

    @Option(help: "Seed for random values (same seed, same events → same bytes).")
    var seed: UInt64 = 0

    @Flag(help: "Exit (status 1) when bluetoothd goes away, instead of waiting for it and registering again.")
    var exitOnLoss = false

    @Flag(name: .shortAndLong, help: "Log more.")
    var verbose = false

    func run() async throws {
        let profile = try loadProfile(self.profile, overrides: overrides)
        let log: EventLog
        do {
            log = try EventLog(format: logFormat, file: events)
        } catch {
            throw Failure.badInput("cannot write events to \(events ?? ""): \(error.localizedDescription)")
        }
        var options = EmulatorOptions(adapter: adapter)
        options.notifyPath = notifyPath.path
        options.seed = seed
        options.exitOnLoss = exitOnLoss
        if let address = ProcessInfo.processInfo.environment["GATTEMU_BUS_ADDRESS"] { options.bus = .address(address) }
        let emulator = Emulator(profile: profile, options: options, log: log)
        let signals = SignalWaiter([SIGINT, SIGTERM])
        do {
            try await emulator.start()
        } catch {
            await emulator.stop()
            log.close()
            throw Failure.runtime(error.description)
        }
        let ending = await withTaskGroup(of: Ending.self) { group in
            group.addTask { .signal(await signals.next()) }
            group.addTask {
                for await reason in emulator.terminations { return .failure(reason) }
                return .signal(0)
            }
            let first = await group.next() ?? .signal(0)
            group.cancelAll()
            return first
        }
        switch ending {
        case .signal(let number):
            log.record(.note, detail: "signal \(number): shutting down")
            await emulator.stop()
            log.close()
        case .failure(let reason):
            await emulator.stop()
            log.close()
            throw Failure.runtime(reason)
        }
    }

    private enum Ending: Sendable {
        case signal(Int32)
        case failure(String)
    }
}

enum NotifyPathArgument: String, ExpressibleByArgument, CaseIterable {
    case acquire, properties

    var path: GattNotifyPath { self == .acquire ? .acquireNotify : .propertiesChanged }
}

extension EventLog.Format: ExpressibleByArgument {}

/// Waits for one of a set of signals without installing a C handler (uses dispatch sources).
///
/// `@unchecked Sendable`: `sources` is written once in `init` and only kept alive afterwards.
final class SignalWaiter: @unchecked Sendable {
    private let stream: AsyncStream<Int32>
    private let sources: [any DispatchSourceSignal]

    init(_ numbers: [Int32]) {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        self.stream = stream
        sources = numbers.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
    }

    func next() async -> Int32 {
        for await number in stream { return number }
        return 0
    }
}
