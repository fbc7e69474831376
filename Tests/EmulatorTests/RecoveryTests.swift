import BlueZ
import BlueZTestSupport
import DBus
import DBusTestSupport
import Emulator
import Foundation
import Profile
import Testing

/// Recovery after a bluetoothd restart, against a stand-in bluetoothd on a private bus.
@Suite struct RecoveryTests {
    /// An emulator of the Noke profile on `bus` (seed 1, a text log), not started.
    static func nokeEmulator(on bus: PrivateBus) throws -> (Emulator, EventLog) {
        var options = EmulatorOptions()
        options.bus = .address(bus.address)
        options.seed = 1
        let log = try EventLog(format: .text)
        return (
            try Emulator(
                profile: ProfileLoader.load(path: profiles.appendingPathComponent("noke-lock.json").path), options: options, log: log), log
        )
    }

    /// A stand-in bluetoothd with one adapter on `bus`, and a Noke emulator (``nokeEmulator(on:)``) started on it.
    static func startedNokeEmulator(on bus: PrivateBus) async throws -> (StandInBluetoothd, Emulator, EventLog) {
        let bluetoothd = try await StandInBluetoothd(bus: bus)
        try await bluetoothd.addAdapter(announce: false)
        let (emulator, log) = try nokeEmulator(on: bus)
        try await emulator.start()
        return (bluetoothd, emulator, log)
    }

    static let profiles = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("profiles")

    /// A registration attempt started by a stack event must not overlap the periodic retry. Seen in the
    /// sandbox with BlueZ 5.82: after a restart the first attempt fails (no adapter yet) and schedules
    /// retries; the adapter then appears and an event starts a second attempt; a retry tick while it
    /// is still registering failed with "… is already exported", and its clean-up unregistered the
    /// application the other attempt had just registered: gattemu kept running with nothing registered.
    @Test func aRetryTickDuringAnEventsRegistrationLeavesEverythingRegistered() async throws {
        let bus = try PrivateBus()
        let (first, emulator, log) = try await Self.startedNokeEmulator(on: bus)
        #expect(first.applications.count == 1)
        #expect(first.advertisements.count == 1)

        await first.stop()  // bluetoothd exits: org.bluez leaves the bus
        try await waitUntil { log.events(since: 0).contains { $0.kind == .bluetoothdLost } }

        // The new bluetoothd has no adapter yet: the first attempt fails and retries start, one a second.
        let second = try await StandInBluetoothd(bus: bus, configuration: .init(advertisementDelay: .seconds(1)))
        try await waitUntil { log.events(since: 0).contains { $0.detail?.contains("not ready yet") == true } }
        // Half a second later the adapter appears; the attempt that starts then is still registering
        // its (slow) advertisement when the next retry tick comes.
        try await Task.sleep(for: .milliseconds(500))
        try await second.addAdapter(announce: true)
        try await waitUntil { log.events(since: 0).contains { $0.kind == .bluetoothdBack } }
        try await Task.sleep(for: .seconds(2))  // let any overlapping attempt finish (and undo)

        #expect(second.applications.count == 1, "the GATT application is registered, once")
        #expect(second.advertisements.count == 1, "the advertisement is registered, once")
        #expect(
            second.registrationCalls.allSatisfy { $0.error == nil },
            "no registration twice, no unregistering what is not registered: \(second.registrationCalls)")
        await emulator.stop()
        #expect(second.applications.isEmpty)
        #expect(second.advertisements.isEmpty)
    }

    /// A power cycle of gattemu's own (the `powerCycle` fault; the address change takes the same steps): bluetoothd
    /// announces the adapter powered on while gattemu is about to advertise again itself. One of them advertises:
    /// both at once exported the same advertisement twice ("already exported", seen in the sandbox).
    @Test func aPowerCycleOfOurOwnAdvertisesAgainOnce() async throws {
        let bus = try PrivateBus()
        let (bluetoothd, emulator, log) = try await Self.startedNokeEmulator(on: bus)
        #expect(bluetoothd.advertisements.count == 1)
        for _ in 0..<3 {
            let before = log.events(since: 0).filter { $0.detail?.contains("powered on (fault)") == true }.count
            _ = try await emulator.addFault(FaultSpecDecoder.spec(JSONParser.parse(#"{"powerCycle": 50}"#, file: "test")))
            try await waitUntil { log.events(since: 0).filter { $0.detail?.contains("powered on (fault)") == true }.count > before }
            // Advertising again follows the note; then a moment for a second registration to show.
            try await waitUntil { bluetoothd.advertisements.count == 1 }
            try await Task.sleep(for: .milliseconds(300))
        }
        let errors = log.events(since: 0).filter { $0.kind == .error }.map { $0.detail ?? "" }
        #expect(errors.isEmpty, "\(errors)")
        #expect(bluetoothd.advertisements.count == 1)
        await emulator.stop()
    }

    /// Clearing the faults (`DELETE /v1/faults`) ends a `silence` that is under way: the device advertises again at
    /// once, not when the silence would have ended. Before, the silence outlived its fault (10 minutes invisible
    /// after "faults cleared").
    @Test func clearingTheFaultsEndsASilenceUnderWay() async throws {
        let bus = try PrivateBus()
        let (bluetoothd, emulator, log) = try await Self.startedNokeEmulator(on: bus)
        _ = try await emulator.addFault(FaultSpecDecoder.spec(JSONParser.parse(#"{"silence": "600s"}"#, file: "test")))
        try await waitUntil { bluetoothd.advertisements.isEmpty }
        _ = await emulator.clearFaults()
        try await waitUntil { bluetoothd.advertisements.count == 1 }
        #expect(log.events(since: 0).contains { $0.detail?.contains("silence ended: faults cleared") == true })
        // A second silence after that works as before, and ends on its own (long enough to be seen on a slow machine).
        _ = try await emulator.addFault(FaultSpecDecoder.spec(JSONParser.parse(#"{"silence": 3000}"#, file: "test")))
        try await waitUntil { bluetoothd.advertisements.isEmpty }
        try await waitUntil { bluetoothd.advertisements.count == 1 }
        try await Task.sleep(for: .milliseconds(200))
        let errors = log.events(since: 0).filter { $0.kind == .error }.map { $0.detail ?? "" }
        #expect(errors.isEmpty, "\(errors)")
        #expect(bluetoothd.advertisements.count == 1)
        await emulator.stop()
    }

    /// The bus itself going away cannot be recovered from: the emulator asks to end, with the reason, and
    /// `stop()` returns instead of waiting for replies that can never come.
    @Test func losingTheBusEndsTheEmulatorAndStopReturns() async throws {
        let bus = try PrivateBus()
        let (_, emulator, log) = try await Self.startedNokeEmulator(on: bus)
        bus.stop()
        let reasons = AsyncCollector<String>()
        Task { for await reason in emulator.terminations { reasons.append(reason) } }
        #expect(await reasons.wait(for: 1) == ["lost the connection to the D-Bus system bus"])
        let stopped = AsyncCollector<Bool>()
        Task {
            await emulator.stop()
            stopped.append(true)
        }
        #expect(await stopped.wait(for: 1) == [true], "stop() returned")
        #expect(log.events(since: 0).last?.kind == .stopped)
    }

    /// ``eventually(within:_:)``, ending the test when the condition never holds.
    private func waitUntil(_ condition: @Sendable () -> Bool) async throws {
        guard try await eventually(condition) else { throw CancellationError() }
    }
}
