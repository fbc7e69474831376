import Bluetooth
import Testing

@testable import Profile

/// Engine semantics on small inline profiles: ordering, guards, stop, otherwise, timers, defaults.
@Suite struct EngineRuleTests {
    static let table = """
        "services": [ { "id": "s", "uuid": "180f", "characteristics": [
          { "id": "rx", "uuid": "2a19", "flags": ["write", "write-without-response"], "maxLength": 32 },
          { "id": "tx", "uuid": "2a1a", "flags": ["read", "notify", "indicate"], "value": { "utf8": "hello" } },
          { "id": "plain", "uuid": "2a1b", "flags": ["read", "write"] },
          { "id": "counter", "uuid": "2a1c", "flags": ["read"], "value": { "template": "{counter(reads)}", "regenerate": "read" } }
        ] } ]
        """

    func engine(_ rest: String) throws -> BehaviourEngine {
        let json = "{ \"format\": 1, \(Self.table), \(rest) }"
        return BehaviourEngine(profile: try loadProfile(json), environment: adapter)
    }

    func write(_ engine: inout BehaviourEngine, _ value: [UInt8], to id: CharacteristicID = "rx") -> EngineOutcome {
        engine.handle(.write(characteristic: id, central: phone, value: value, withResponse: true))
    }

    @Test func rulesFireInFileOrderUntilStop() throws {
        var engine = try engine(
            """
            "rules": [
              { "id": "one", "on": { "write": "rx" }, "do": { "log": "one {request}" } },
              { "id": "two", "on": { "write": "rx", "prefix": "01" }, "do": { "log": "two" }, "stop": true },
              { "id": "three", "on": { "write": "rx" }, "do": { "log": "three" } },
              { "id": "fallback", "on": { "write": "rx" }, "otherwise": true, "do": { "log": "fallback" } }
            ]
            """)
        #expect(write(&engine, [0x01, 0xAB]).effects == [.log("one 01AB"), .log("two")])
        #expect(write(&engine, [0x02]).firedRules == ["one", "three"])
        #expect(engine.handle(.read(characteristic: "tx", central: phone, offset: 0)).firedRules == [])
    }

    @Test func oneTemplateTextKeepsItsKindWhereverItIsUsed() throws {
        // The decoder parses each template text once; the same text as a log line (text) and as a value
        // (bytes) must still render as text and as bytes.
        var engine = try engine(
            """
            "rules": [
              { "id": "one", "on": { "write": "rx" }, "do": [
                { "log": "41 {request[0]}" }, { "notify": "tx", "value": "41 {request[0]}" },
                { "log": "41 {request[0]}" }, { "notify": "tx", "value": "41 {request[0]}" }
              ] }
            ]
            """)
        let effects = write(&engine, [0x07]).effects
        #expect(effects.count == 4)
        #expect(effects.filter { $0 == .log("41 07") }.count == 2)
        let notified = effects.compactMap { effect -> [UInt8]? in
            if case .notify(_, let value, _, _) = effect { return value }
            return nil
        }
        #expect(notified == [[0x41, 0x07], [0x41, 0x07]])
    }

    @Test func otherwiseFiresOnlyWhenNothingElseDid() throws {
        var engine = try engine(
            """
            "rules": [
              { "id": "exact", "on": { "write": "rx", "equals": "CA FE" }, "do": { "succeed": true } },
              { "id": "fallback", "on": { "write": "rx" }, "otherwise": true, "do": { "fail": "0x80" } }
            ]
            """)
        #expect(write(&engine, [0xCA, 0xFE]).effects == [.reply(.success)])
        #expect(write(&engine, [0xCA]).effects == [.reply(.error(.application(0x80)))])
    }

    @Test func matchers() throws {
        var engine = try engine(
            """
            "rules": [
              { "id": "mask", "on": { "write": "rx", "mask": { "bits": "F0 FF", "equals": "50 01" } }, "do": { "log": "m" } },
              { "id": "range", "on": { "write": "rx", "length": { "min": 3, "max": 4 } }, "do": { "log": "r" } },
              { "id": "regex", "on": { "write": "rx", "regex": "^ab+c$" }, "do": { "log": "x" } },
              { "id": "json", "on": { "write": "rx", "json": { "stripPrefix": "#", "field": "a.b", "equals": 2 } }, "do": { "log": "j" } }
            ]
            """)
        #expect(write(&engine, [0x5A, 0x01]).firedRules == ["mask"])
        #expect(write(&engine, [0x4A, 0x01]).firedRules == [])
        #expect(write(&engine, [0x5A]).firedRules == [])  // shorter than the mask
        #expect(write(&engine, [1, 2, 3]).firedRules == ["range"])
        #expect(write(&engine, Array("abbbc".utf8)).firedRules == ["regex"])
        #expect(write(&engine, Array("#{\"a\":{\"b\":2}}".utf8)).firedRules == ["json"])
        #expect(write(&engine, Array("#{\"a\":{\"b\":3}}".utf8)).firedRules == [])
    }

    @Test func guardsOnStateVariablesAndArguments() throws {
        var engine = try engine(
            """
            "variables": { "limit": 2 },
            "state": { "count": 0, "mode": "idle" },
            "triggers": { "poke": "poke it" },
            "rules": [
              { "id": "count", "on": { "write": "rx" }, "when": { "state": "count", "less": 2 }, "do": { "set": { "count": { "increment": 1 } } } },
              { "id": "full", "on": { "write": "rx" }, "when": [ { "state": "count", "greaterOrEqual": 2 }, { "state": "mode", "notEquals": "busy" } ], "do": { "set": { "mode": "busy" } } },
              { "id": "poke", "on": { "trigger": "poke" }, "when": { "argument": "level", "greater": 5 }, "do": { "log": "poked {arg(\\"level\\")}" } }
            ]
            """)
        #expect(write(&engine, [1]).firedRules == ["count"])
        // After the increment the second rule sees count == 2 within the same event.
        #expect(write(&engine, [1]).firedRules == ["count", "full"])
        #expect(engine.state == ["count": .number(2), "mode": .string("busy")])
        #expect(write(&engine, [1]).firedRules == [])
        #expect(engine.handle(.trigger("poke", arguments: ["level": "9"])).effects == [.log("poked 9")])
        #expect(engine.handle(.trigger("poke", arguments: ["level": "1"])).firedRules == [])
        #expect(engine.handle(.trigger("nope", arguments: [:])).effects == [.log("unknown trigger \"nope\"")])
        engine.reset()
        #expect(engine.state == ["count": .number(0), "mode": .string("idle")])
    }

    @Test func defaultWriteStorageReadsAndOffsets() throws {
        var engine = try engine(
            """
            "rules": [ { "id": "r", "on": { "read": "tx" }, "do": { "reply": "{value(tx)} 21" } } ]
            """)
        // No rules on "plain": the write is stored, as a GATT server would.
        #expect(write(&engine, [7, 8], to: "plain").effects == [.setValue(characteristic: "plain", value: [7, 8])])
        #expect(engine.value(of: "plain") == [7, 8])
        // Too long for maxLength 32.
        #expect(write(&engine, [UInt8](repeating: 0, count: 33)).effects == [.reply(.error(.invalidValueLength))])
        let read = engine.handle(.read(characteristic: "tx", central: phone, offset: 3))
        #expect(read.effects == [.reply(.value(Array("lo!".utf8)))])
        #expect(engine.handle(.read(characteristic: "tx", central: phone, offset: 9)).effects == [.reply(.error(.invalidOffset))])
        #expect(engine.handle(.read(characteristic: "zz", central: phone, offset: 0)).reply == .error(.notSupported))
        // Regenerated on every read at offset 0.
        _ = engine.handle(.read(characteristic: "counter", central: phone, offset: 0))
        #expect(engine.value(of: "counter") == [1])
        _ = engine.handle(.read(characteristic: "counter", central: phone, offset: 1))
        #expect(engine.value(of: "counter") == [1])
    }

    @Test func notificationTargetsAndDisconnect() throws {
        var engine = try engine(
            """
            "triggers": { "kick": "kick everyone" },
            "rules": [
              { "id": "w", "on": { "write": "rx" }, "do": [ { "notify": "tx", "value": "01" }, { "indicate": "tx", "value": "02", "to": "all" }, { "delay": 25 }, { "disconnect": true } ] },
              { "id": "kick", "on": { "trigger": "kick" }, "do": [ { "notify": "tx", "value": "03" }, { "disconnect": true } ] }
            ]
            """)
        _ = engine.handle(.connect(phone))
        _ = engine.handle(.connect(otherPhone))
        #expect(
            write(&engine, [0]).effects == [
                .notify(characteristic: "tx", value: [1], target: .central(phone), indicate: false),
                .notify(characteristic: "tx", value: [2], target: .allSubscribers, indicate: true),
                .delay(.milliseconds(25)),
                .disconnect(phone),
            ])
        #expect(
            engine.handle(.trigger("kick", arguments: [:])).effects == [
                .notify(characteristic: "tx", value: [3], target: .allSubscribers, indicate: false),
                .disconnect(phone), .disconnect(otherPhone),
            ])
    }

    @Test func timersStartOnConnectRepeatAndCancel() throws {
        var engine = try engine(
            """
            "variables": { "period": 1500 },
            "state": { "ticks": 0 },
            "timers": [ { "id": "tick", "every": "period", "start": "connect" }, { "id": "once", "after": "2s" } ],
            "rules": [
              { "id": "tick", "on": { "timer": "tick" }, "do": [ { "set": { "ticks": { "increment": 1 } } }, { "startTimer": "once", "after": 10 } ] },
              { "id": "once", "on": { "timer": "once" }, "do": [ { "cancelTimer": "tick" }, { "stopAdvertising": true } ] }
            ]
            """)
        #expect(engine.handle(.connect(phone)).effects == [.scheduleTimer(id: "tick", after: .milliseconds(1500), repeating: true)])
        #expect(engine.handle(.timer("tick")).effects == [.scheduleTimer(id: "once", after: .milliseconds(10), repeating: false)])
        #expect(engine.handle(.timer("tick")).firedRules == ["tick"])  // repeating timers stay active
        #expect(engine.state["ticks"] == .number(2))
        #expect(engine.handle(.timer("once")).effects == [.cancelTimer(id: "tick"), .stopAdvertising])
        #expect(!engine.isAdvertising)
        #expect(engine.handle(.timer("tick")).firedRules == [])  // cancelled: a late fire is ignored
        _ = engine.handle(.connect(phone))
        #expect(engine.handle(.disconnect(phone)).effects == [.cancelTimer(id: "tick")])
    }

    @Test func subscriptionsAreTracked() throws {
        var engine = try engine(
            """
            "rules": [ { "id": "s", "on": { "subscribe": "tx" }, "do": { "notify": "tx", "value": "{central}" } } ]
            """)
        let outcome = engine.handle(.subscribe(characteristic: "tx", central: phone))
        #expect(outcome.notifications.first?.value == Array("112233445566".utf8))
        #expect(engine.subscribers["tx"] == [phone])
        _ = engine.handle(.disconnect(phone))
        #expect(engine.subscribers["tx"] == [])
    }
}
