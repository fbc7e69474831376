import Testing

@testable import Profile

/// Values rendered at run time are cut to their limits, durations clamped, and each time the engine says so
/// with a `.log` effect.
@Suite struct EngineLimitTests {
    static let table = """
        "services": [ { "id": "s", "uuid": "180f", "characteristics": [
          { "id": "rx", "uuid": "2a19", "flags": ["write"] },
          { "id": "tx", "uuid": "2a1a", "flags": ["read", "notify"], "maxLength": 4 },
          { "id": "big", "uuid": "2a1b", "flags": ["read"] }
        ] } ]
        """

    func engine(_ rest: String) throws -> BehaviourEngine {
        BehaviourEngine(profile: try loadProfile("{ \"format\": 1, \(Self.table), \(rest) }"), environment: adapter)
    }

    func write(_ engine: inout BehaviourEngine, _ value: [UInt8]) -> EngineOutcome {
        engine.handle(.write(characteristic: "rx", central: phone, value: value, withResponse: true))
    }

    @Test func notifyAndSetValueAreCutToMaxLengthWithALogLine() throws {
        var engine = try engine(
            """
            "rules": [ { "on": { "write": "rx" }, "do": [ { "notify": "tx", "value": "{request}" }, { "setValue": "tx", "value": "00 {request}" } ] } ]
            """)
        #expect(
            write(&engine, [1, 2, 3]).effects == [
                .notify(characteristic: "tx", value: [1, 2, 3], target: .central(phone), indicate: false),
                .setValue(characteristic: "tx", value: [0, 1, 2, 3]),
            ])
        #expect(
            write(&engine, [1, 2, 3, 4, 5, 6]).effects == [
                .log(#"rules[0].do[0].notify: the value for "tx" is 6 bytes, cut to its maximum of 4"#),
                .notify(characteristic: "tx", value: [1, 2, 3, 4], target: .central(phone), indicate: false),
                .log(#"rules[0].do[1].setValue: the value for "tx" is 7 bytes, cut to its maximum of 4"#),
                .setValue(characteristic: "tx", value: [0, 1, 2, 3]),
            ])
        #expect(engine.value(of: "tx") == [0, 1, 2, 3])
    }

    @Test func readRepliesAreCutBeforeTheOffsetIsApplied() throws {
        var engine = try engine(
            """
            "state": { "n": 5 },
            "rules": [ { "on": { "read": "big" }, "do": { "reply": "{fill(0x41, n - 100)} {fill(0x42, n)}" } },
                       { "on": { "write": "rx" }, "do": { "set": { "n": 600 } } } ]
            """)
        _ = write(&engine, [1])
        let outcome = engine.handle(.read(characteristic: "big", central: phone, offset: 500))
        #expect(
            outcome.effects == [
                .log("rules[0].do.reply: a template value reached a limit and was cut (values at 4096 bytes, counts at 512)"),
                .log(#"rules[0].do.reply: the value for "big" is 1012 bytes, cut to its maximum of 512"#),
                .reply(.value(Array(repeating: 0x42, count: 12))),
            ])
    }

    @Test func setTemplatesStopAtTheValueLimit() throws {
        var engine = try engine(
            """
            "state": { "buf": { "hex": "AB" } },
            "rules": [ { "on": { "write": "rx" }, "do": { "set": { "buf": { "template": "{buf}{buf}" } } } } ]
            """)
        for _ in 0..<12 { #expect(write(&engine, [1]).effects.isEmpty) }
        #expect(engine.state["buf"] == .bytes(Array(repeating: 0xAB, count: 4096)))
        #expect(
            write(&engine, [1]).effects == [
                .log(#"rules[0].do.set.buf: the value for "buf" reached a limit and was cut (values at 4096 bytes, counts at 512)"#)
            ])
        #expect(engine.state["buf"] == .bytes(Array(repeating: 0xAB, count: 4096)))
        _ = write(&engine, [1])
        #expect(engine.state["buf"] == .bytes(Array(repeating: 0xAB, count: 4096)))
    }

    @Test func durationsFromVariablesAreClampedAndLoggedOnce() throws {
        var engine = try engine(
            """
            "variables": { "period": 0, "pause": -5, "long": 90000000 },
            "timers": [ { "id": "tick", "every": "period" } ],
            "rules": [ { "on": { "write": "rx" }, "do": [ { "startTimer": "tick" }, { "delay": "pause" }, { "delay": "long" }, { "startTimer": "tick", "after": "long" } ] } ]
            """)
        #expect(
            write(&engine, [1]).effects == [
                .log("timer tick: period is 0 ms, outside 10…86400000; using 10 ms"),
                .scheduleTimer(id: "tick", after: .milliseconds(10), repeating: true),
                .log("rules[0].do[1].delay: pause is -5 ms, outside 0…86400000; using 0 ms"),
                .delay(.zero),
                .log("rules[0].do[2].delay: long is 90000000 ms, outside 0…86400000; using 86400000 ms"),
                .delay(.milliseconds(86_400_000)),
                .log("timer tick: long is 90000000 ms, outside 10…86400000; using 86400000 ms"),
                .scheduleTimer(id: "tick", after: .milliseconds(86_400_000), repeating: true),
            ])
        // The second time, the same values are clamped without a word.
        #expect(
            write(&engine, [1]).effects == [
                .scheduleTimer(id: "tick", after: .milliseconds(10), repeating: true),
                .delay(.zero),
                .delay(.milliseconds(86_400_000)),
                .scheduleTimer(id: "tick", after: .milliseconds(86_400_000), repeating: true),
            ])
    }

    @Test func incrementWraps() throws {
        var engine = try engine(
            """
            "state": { "n": 9223372036854775807 },
            "rules": [ { "on": { "write": "rx" }, "do": { "set": { "n": { "increment": 1 } } } } ]
            """)
        _ = write(&engine, [1])
        #expect(engine.state["n"] == .number(Int.min))
    }
}
