import Bluetooth
import Profile
import Testing

@testable import Emulator

/// Decodes a spec written as JSON text.
func fault(_ json: String) throws -> FaultSpec {
    try FaultSpecDecoder.spec(try JSONParser.parse(json, file: "test"))
}

func write(_ characteristic: CharacteristicID = "config", central: String = "AA:BB:CC:DD:EE:01") -> FaultOperation {
    FaultOperation(.write, characteristic: characteristic, centrals: [BluetoothAddress(central)!])
}

func notify(_ characteristic: CharacteristicID = "tx", centrals: [String] = ["AA:BB:CC:DD:EE:01"]) -> FaultOperation {
    FaultOperation(.notify, characteristic: characteristic, centrals: centrals.map { BluetoothAddress($0)! })
}

@Suite struct FaultEngineScopeTests {
    @Test func errorOnEveryMatchingWriteUntilCountRunsOut() throws {
        var engine = FaultEngine()
        try engine.add(fault(#"{"on": "write", "characteristic": "config", "error": "not-authorized", "count": 2}"#))
        #expect(engine.plan(for: write()).error == .notAuthorized)
        #expect(engine.plan(for: write("other")).isEmpty)
        #expect(engine.plan(for: write()).error == .notAuthorized)
        #expect(engine.plan(for: write()).isEmpty)
        #expect(engine.faults[0].exhausted)
        #expect(engine.faults[0].matched == 3)
        #expect(engine.faults[0].fired == 2)
    }

    @Test func nthFiresOnlyOnTheNthMatch() throws {
        var engine = FaultEngine()
        try engine.add(fault(#"{"on": "write", "nth": 3, "disconnect": true}"#))
        let fired = (1...6).map { _ in engine.plan(for: write()).disconnect }
        #expect(fired == [false, false, true, false, false, false])
    }

    @Test func nthWithCountFiresFromTheNthOn() throws {
        var engine = FaultEngine()
        try engine.add(fault(#"{"on": "read", "nth": 2, "count": 2, "drop": true}"#))
        let dropped = (1...5).map { _ in engine.plan(for: FaultOperation(.read, characteristic: "x", centrals: [])).drop }
        #expect(dropped == [false, true, true, false, false])
    }

    @Test func centralScopeIsCaseInsensitiveAndIgnoresOthers() throws {
        var engine = FaultEngine()
        try engine.add(fault(#"{"on": "write", "central": "aa:bb:cc:dd:ee:02", "error": "0x80"}"#))
        #expect(engine.plan(for: write(central: "AA:BB:CC:DD:EE:01")).isEmpty)
        #expect(engine.plan(for: write(central: "AA:BB:CC:DD:EE:02")).error == .application(0x80))
        // A notification to every subscriber matches when the central is among them.
        try engine.add(fault(#"{"on": "notify", "central": "AA:BB:CC:DD:EE:02", "drop": true}"#))
        #expect(engine.plan(for: notify(centrals: ["AA:BB:CC:DD:EE:01", "AA:BB:CC:DD:EE:02"])).drop)
        #expect(!engine.plan(for: notify(centrals: ["AA:BB:CC:DD:EE:01"])).drop)
    }

    @Test func operationKindMustMatch() throws {
        var engine = FaultEngine()
        try engine.add(fault(#"{"on": "indicate", "drop": true}"#))
        #expect(engine.plan(for: notify()).isEmpty)
        #expect(engine.plan(for: FaultOperation(.indicate, characteristic: "tx")).drop)
    }

    @Test func severalFaultsCombine() throws {
        var engine = FaultEngine()
        try engine.add(fault(#"{"on": "notify", "delay": 20}"#))
        try engine.add(fault(#"{"on": "notify", "delay": "30ms"}"#))
        try engine.add(fault(#"{"on": "notify", "truncate": 2}"#))
        let plan = engine.plan(for: notify())
        #expect(plan.delayMilliseconds == 50)
        #expect(plan.fired.map(\.id) == ["f1", "f2", "f3"])
        #expect(plan.mutate([1, 2, 3, 4]) == [1, 2])
    }

    @Test func idsAreAssignedAndDuplicatesRefused() throws {
        var engine = FaultEngine()
        #expect(try engine.add(fault(#"{"on": "read", "drop": true}"#)).id == "f1")
        #expect(try engine.add(fault(#"{"id": "mine", "on": "read", "drop": true}"#)).id == "mine")
        #expect(throws: FaultSpecError.self) { try engine.add(fault(#"{"id": "mine", "on": "read", "drop": true}"#)) }
        #expect(try engine.add(fault(#"{"on": "read", "drop": true}"#)).id == "f2")
        let removed = engine.remove(id: "f1")
        let removedAgain = engine.remove(id: "f1")
        #expect(removed)
        #expect(!removedAgain)
        #expect(engine.faults.map(\.id) == ["mine", "f2"])
    }
}

@Suite struct FaultEngineSeedTests {
    func firings(seed: UInt64, spec: String, operations: Int = 200) throws -> [Bool] {
        var engine = FaultEngine(seed: seed)
        try engine.add(fault(spec))
        return (0..<operations).map { _ in !engine.plan(for: write()).isEmpty }
    }

    @Test func seededProbabilityReplaysExactly() throws {
        let spec = #"{"on": "write", "probability": 0.3, "seed": 42, "error": "failed"}"#
        let first = try firings(seed: 0, spec: spec)
        #expect(first == (try firings(seed: 0, spec: spec)))
        // The fault's own seed wins over the run's seed.
        #expect(first == (try firings(seed: 99, spec: spec)))
        let count = first.filter { $0 }.count
        #expect((30...90).contains(count), "about 30% of 200, got \(count)")
        #expect(first != (try firings(seed: 0, spec: #"{"on": "write", "probability": 0.3, "seed": 43, "error": "failed"}"#)))
    }

    @Test func withoutItsOwnSeedTheRunSeedDecides() throws {
        let spec = #"{"on": "write", "probability": 0.5, "drop": true}"#
        #expect(try firings(seed: 7, spec: spec) == firings(seed: 7, spec: spec))
        #expect(try firings(seed: 7, spec: spec) != firings(seed: 8, spec: spec))
    }

    @Test func anotherFaultDoesNotShiftTheDraws() throws {
        let spec = #"{"on": "write", "probability": 0.5, "seed": 1, "drop": true}"#
        var alone = FaultEngine()
        try alone.add(fault(spec))
        var together = FaultEngine()
        try together.add(fault(#"{"on": "write", "probability": 0.5, "seed": 2, "delay": {"min": 1, "max": 9}}"#))
        try together.add(fault(spec))
        for _ in 0..<50 {
            #expect(alone.plan(for: write()).drop == together.plan(for: write()).drop)
        }
    }

    @Test func jitterStaysInRangeAndReplays() throws {
        func delays() throws -> [Int] {
            var engine = FaultEngine(seed: 3)
            try engine.add(fault(#"{"on": "read", "delay": {"min": "100ms", "max": "0.3s"}}"#))
            return (0..<100).map { _ in engine.plan(for: FaultOperation(.read, characteristic: "x")).delayMilliseconds }
        }
        let first = try delays()
        #expect(first.allSatisfy { (100...300).contains($0) })
        #expect(Set(first).count > 10)
        #expect(first == (try delays()))
    }
}

@Suite struct FaultEngineNotificationTests {
    @Test func corruptReplaceXorAndFlip() throws {
        #expect(ValueMutation.replace(at: 1, bytes: [0xFF, 0xEE]).apply(to: [1, 2, 3]) == [1, 0xFF, 0xEE])
        #expect(ValueMutation.replace(at: 4, bytes: [9]).apply(to: [1, 2]) == [1, 2, 0, 0, 9])
        #expect(ValueMutation.xor(at: 0, mask: [0x01, 0x80, 0xFF]).apply(to: [0x10, 0x10]) == [0x11, 0x90])
        #expect(ValueMutation.truncate(1).apply(to: [1, 2, 3]) == [1])
        #expect(ValueMutation.flipBits([0, 9]).apply(to: [0, 0]) == [0x01, 0x02])
        #expect(ValueMutation.flipBits([5]).apply(to: []) == [])

        var engine = FaultEngine(seed: 5)
        try engine.add(fault(#"{"on": "notify", "corrupt": {"flipBits": 3}}"#))
        let value: [UInt8] = Array(repeating: 0, count: 8)
        let sent = engine.notificationValues(value, characteristic: "tx", plan: engine.plan(for: notify()))
        #expect(sent.count == 1)
        let flipped = sent[0].map { $0.nonzeroBitCount }.reduce(0, +)
        #expect(flipped == 3 || flipped == 1, "three flips (two may cancel), got \(flipped)")
        #expect(sent[0] != value)
    }

    @Test func truncateAndDuplicate() throws {
        var engine = FaultEngine()
        try engine.add(fault(#"{"on": "notify", "characteristic": "tx", "truncate": 2}"#))
        try engine.add(fault(#"{"on": "notify", "characteristic": "tx", "duplicate": 2}"#))
        let plan = engine.plan(for: notify())
        #expect(engine.notificationValues([1, 2, 3], characteristic: "tx", plan: plan) == [[1, 2], [1, 2], [1, 2]])
    }

    @Test func dropSendsNothing() throws {
        var engine = FaultEngine()
        try engine.add(fault(#"{"on": "notify", "nth": 2, "drop": true}"#))
        let values: [[[UInt8]]] = (1...3).map { index in
            let plan = engine.plan(for: notify())
            return engine.notificationValues([UInt8(index)], characteristic: "tx", plan: plan)
        }
        #expect(values == [[[1]], [], [[3]]])
    }

    @Test func reorderSwapsWithTheNextOne() throws {
        var engine = FaultEngine()
        try engine.add(fault(#"{"on": "notify", "characteristic": "tx", "nth": 1, "reorder": true}"#))
        var sent: [[UInt8]] = []
        for index in 1...3 {
            let plan = engine.plan(for: notify())
            sent += engine.notificationValues([UInt8(index)], characteristic: "tx", plan: plan)
        }
        #expect(sent == [[2], [1], [3]])
        #expect(engine.heldCharacteristics.isEmpty)
    }

    @Test func clearingReleasesHeldNotifications() throws {
        var engine = FaultEngine()
        try engine.add(fault(#"{"on": "notify", "reorder": true}"#))
        let plan = engine.plan(for: notify())
        #expect(engine.notificationValues([7], characteristic: "tx", plan: plan).isEmpty)
        #expect(engine.heldCharacteristics == ["tx"])
        let released = engine.removeAll()
        #expect(released.map(\.characteristic) == ["tx"])
        #expect(released.map(\.value) == [[7]])
    }
}

@Suite struct FaultSpecDecoderTests {
    func problem(_ json: String) -> String? {
        do {
            _ = try fault(json)
            return nil
        } catch let error as FaultSpecError {
            return error.description
        } catch {
            return "\(error)"
        }
    }

    @Test func decodesEveryAction() throws {
        #expect(try fault(#"{"on": "write", "error": "not-authorized"}"#).action == .error(.notAuthorized))
        #expect(try fault(#"{"on": "write", "error": 150}"#).action == .error(.application(150)))
        #expect(try fault(#"{"on": "read", "delay": "1.5s"}"#).action == .delay(minMilliseconds: 1500, maxMilliseconds: 1500))
        #expect(
            try fault(#"{"on": "read", "delay": {"min": "2s", "max": 100}}"#).action == .delay(minMilliseconds: 100, maxMilliseconds: 2000))
        #expect(try fault(#"{"on": "notify", "corrupt": {"at": 2, "xor": "ff"}}"#).action == .corrupt(.xor(at: 2, mask: [0xFF])))
        #expect(try fault(#"{"on": "notify", "duplicate": true}"#).action == .duplicate(copies: 1))
        #expect(try fault(#"{"silence": "10s"}"#).on == .start)
        #expect(try fault(#"{"silence": "10s", "after": 500}"#).scope.afterMilliseconds == 500)
        #expect(try fault(#"{"advertise": null}"#).action == .advertise(variant: nil))
        #expect(try fault(#"{"powerCycle": true}"#).action == .powerCycle(offMilliseconds: 1000))
        let scoped = try fault(
            #"{"on": "write", "characteristic": "rx", "central": "aa:bb:cc:dd:ee:ff", "nth": 3, "probability": 0.25, "seed": 9, "drop": true}"#
        )
        #expect(
            scoped.scope
                == FaultScope(
                    characteristic: "rx", central: BluetoothAddress("AA:BB:CC:DD:EE:FF"), nth: 3, count: 1, probability: 0.25, seed: 9))
    }

    @Test func refusesBadSpecsWithAReason() {
        #expect(problem(#"{"on": "write"}"#)?.contains("needs one action") == true)
        #expect(problem(#"{"on": "write", "drop": true, "error": "failed"}"#)?.contains("one action") == true)
        #expect(problem(#"{"error": "failed"}"#)?.contains("missing \"on\"") == true)
        #expect(problem(#"{"on": "notify", "error": "failed"}"#)?.contains("cannot apply") == true)
        #expect(problem(#"{"on": "write", "error": "0x20"}"#)?.contains("0x80") == true)
        #expect(problem(#"{"on": "write", "error": "nope"}"#) != nil)
        #expect(problem(#"{"on": "write", "drop": true, "probability": 2}"#)?.contains("probability") == true)
        #expect(problem(#"{"on": "write", "drop": true, "nth": 0}"#)?.contains("nth") == true)
        #expect(problem(#"{"on": "write", "drop": true, "central": "nope"}"#)?.contains("central") == true)
        #expect(problem(#"{"on": "write", "drop": true, "charcteristic": "x"}"#)?.contains("characteristic") == true)
        #expect(problem(#"{"on": "notify", "corrupt": {"hex": "zz"}}"#)?.contains("hex") == true)
        // min and max in either order (a JSON Schema cannot say min ≤ max, so the contract accepts both); nothing else.
        #expect(problem(#"{"on": "read", "delay": {"min": 5, "max": 1}}"#) == nil)
        #expect(problem(#"{"on": "read", "delay": {"min": 1, "max": 5, "step": 1}}"#)?.contains("min") == true)
        #expect(problem(#"{"on": "read", "delay": {"min": 1}}"#) != nil)
        #expect(problem(#"[1]"#)?.contains("object") == true)
    }
}
