import Bluetooth
import DBus
import Foundation
import Profile
import Testing

@testable import BlueZ
@testable import Emulator

/// The effects after an answer wait behind earlier events' effects; how many events may wait is bounded.
@Suite struct EffectChainTests {
    /// Every write is answered at once; the first (00) then waits a day before its log line, so the effects of
    /// the next writes queue behind it however slowly the machine runs them.
    static func emulator() throws -> Emulator {
        let profile = try ProfileLoader.load(
            json: """
                { "format": 1,
                  "services": [{ "id": "s", "uuid": "180f", "characteristics": [{ "id": "rx", "uuid": "2a19", "flags": ["write-without-response"] }] }],
                  "rules": [{ "on": { "write": "rx", "equals": "00" }, "do": [{ "delay": 86400000 }, { "log": "late {request}" }] },
                            { "on": { "write": "rx" }, "otherwise": true, "do": [{ "delay": 1 }, { "log": "late {request}" }] }] }
                """, file: "chain.json")
        return try Emulator(profile: profile, options: EmulatorOptions(), log: try EventLog(format: .json))
    }

    static func write(_ value: [UInt8]) -> GattWriteRequest {
        GattWriteRequest(
            attribute: GattAttributeID(characteristic: "rx"), value: value, offset: 0, kind: .command,
            bluetoothdAnswered: false, prepareAuthorize: false,
            context: GattRequestContext(central: BluetoothAddress("AA:BB:CC:DD:EE:01"), mtu: ATTMTU(rawValue: 185)))
    }

    @Test(.timeLimit(.minutes(5))) func chainsBeyondTheLimitAreDroppedLoudlyAndStopCutsTheRestShort() async throws {
        let emulator = try Self.emulator()
        let limit = Emulator.maximumPendingEffectChains
        for index in 0..<(limit + 10) {
            try await emulator.write(Self.write([UInt8(index)]))
        }
        #expect(await emulator.pendingEffectChains == limit)
        // Every write and its answer carry the MTU the request reported.
        let writes = emulator.events.events.filter { $0.kind == .write || $0.kind == .answer }
        #expect(!writes.isEmpty && writes.allSatisfy { $0.mtu == 185 })
        let dropped = emulator.events.events.filter {
            $0.kind == .error && $0.detail?.hasPrefix("dropped 2 effects after the answer (delay, log)") == true
        }
        #expect(dropped.count == 10)
        #expect(dropped.first?.detail?.hasSuffix("the effects of \(limit) earlier events are still waiting") == true)

        // Stopping does not wait out the day: the delays end at once, the rest runs in order before `stopped`.
        await emulator.stop()
        #expect(await emulator.pendingEffectChains == 0)
        let events = emulator.events.events
        let late = events.compactMap { $0.kind == .note ? $0.detail : nil }.filter { $0.hasPrefix("late ") }
        #expect(late == (0..<limit).map { "late " + [UInt8($0)].hexString() })
        #expect(events.last?.kind == .stopped)
    }

    /// A write answered by the profile waits for the effects of earlier events before its answer. Behind a day-long
    /// delay, each such write would wait a day: bluetoothd stops waiting after 5 s, but gattemu kept every call, so a
    /// central writing without pause grew gattemu's memory without bound (the hostile profile delay-chain: 52 MiB to
    /// 74 MiB in 60 s). At most ``Emulator/maximumWaitingOperations`` operations wait; the next are answered at once,
    /// without their effects, and each says so in the log.
    @Test(.timeLimit(.minutes(5))) func operationsWaitingBehindEffectsAreBoundedAndAnsweredAtOnce() async throws {
        let profile = try ProfileLoader.load(
            json: """
                { "format": 1,
                  "services": [{ "id": "s", "uuid": "180f", "characteristics": [{ "id": "rx", "uuid": "2a19", "flags": ["write"] }] }],
                  "rules": [{ "on": { "write": "rx" }, "do": [{ "succeed": true }, { "delay": 86400000 }, { "log": "late {request}" }] }] }
                """, file: "waiting.json")
        let emulator = try Emulator(profile: profile, options: EmulatorOptions(), log: try EventLog(format: .json))
        var request = Self.write([0])
        request.kind = .request
        // The first write is answered; its day-long delay then holds the chain.
        try await emulator.write(request)
        let limit = Emulator.maximumWaitingOperations
        let extra = 5
        var waiting: [Task<Void, any Error>] = []
        for index in 1...limit {
            request.value = [UInt8(index)]
            let queued = request
            waiting.append(Task { try await emulator.write(queued) })
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while await emulator.operationsWaitingForEffects < limit, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await emulator.operationsWaitingForEffects == limit)
        // The next ones do not wait: answered at once (this test would hang here before), effects dropped, logged.
        for index in 0..<extra {
            request.value = [0xF0 + UInt8(index)]
            try await emulator.write(request)
        }
        let dropped = emulator.events.events.filter {
            $0.kind == .error && $0.detail?.hasPrefix("answered at once without waiting") == true
        }
        #expect(dropped.count == extra)
        #expect(dropped.first?.detail?.contains("\(limit) earlier operations") == true)
        #expect(await emulator.operationsWaitingForEffects == limit)
        // Stopping ends the day's wait: every waiting write is answered, and none waits any more.
        await emulator.stop()
        for task in waiting { try await task.value }
        #expect(await emulator.operationsWaitingForEffects == 0)
    }

    @Test(.timeLimit(.minutes(5))) func aFinishedChainFreesItsPlace() async throws {
        let emulator = try Self.emulator()
        try await emulator.write(Self.write([0xEE]))
        let deadline = ContinuousClock.now + .seconds(30)
        while await emulator.pendingEffectChains > 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(await emulator.pendingEffectChains == 0)
        #expect(emulator.events.events.contains { $0.detail == "late EE" })
    }
}
