import Bluetooth
import Testing

@testable import Profile

@Suite struct NokeEngineTests {
    let command = hex("0000c20081e628151d34af9c8878e4efbb84311d")

    func engine(_ overrides: [(path: String, value: String)] = []) throws -> BehaviourEngine {
        let profile = try ProfileLoader.load(path: Paths.profile("noke-lock.json"), overrides: overrides)
        return BehaviourEngine(profile: profile, environment: adapter)
    }

    func padded(_ bytes: [UInt8]) -> [UInt8] { bytes + [UInt8](repeating: 0, count: 20 - bytes.count) }

    @Test func advertisesNameServiceAndLockState() throws {
        let engine = try engine()
        #expect(engine.deviceName() == "NOKE3E_D01FA644B36F")
        let advertisement = try #require(engine.advertisements().first)
        #expect(advertisement.localName == "NOKE3E_D01FA644B36F")
        #expect(advertisement.localName?.count == 19)
        #expect(advertisement.serviceUUIDs.map(\.description) == ["1bc50001-0200-d29e-e511-446c609db825"])
        // locked (2 << 5), firmware 2.10, auto-unlock 0
        #expect(advertisement.manufacturerData == [0xFFFF: [0x40, 0x02, 0x0A, 0x00, 0x00]])
    }

    @Test func appFlowUnlocksAndRelocks() throws {
        var engine = try engine()
        let connected = engine.handle(.connect(phone))
        let session = engine.value(of: "session")
        #expect(session.count == 20)
        #expect(Array(session[2...3]) == [0x04, 0x0B])  // 2820 mV little-endian
        #expect(connected.effects == [.setValue(characteristic: "session", value: session)])

        let read = engine.handle(.read(characteristic: "session", central: phone, offset: 0))
        #expect(read.effects == [])
        #expect(engine.value(of: "session") == session)
        #expect(engine.handle(.subscribe(characteristic: "tx", central: phone)).effects == [])

        let unlocked = engine.handle(.write(characteristic: "rx", central: phone, value: command, withResponse: false))
        #expect(unlocked.firedRules == ["success"])
        #expect(
            unlocked.effects == [
                .notify(characteristic: "tx", value: padded([0x51, 0x60, 0xC2]), target: .central(phone), indicate: false),
                .scheduleTimer(id: "relock", after: .milliseconds(5000), repeating: false),
                .switchAdvertisement(variant: nil),
            ])
        #expect(engine.state["lockState"] == .number(0))
        #expect(engine.advertisements().first?.manufacturerData[0xFFFF]?.first == 0x00)
        #expect(engine.value(of: "tx") == padded([0x51, 0x60, 0xC2]))

        let relocked = engine.handle(.timer("relock"))
        #expect(relocked.firedRules == ["relock"])
        #expect(relocked.effects == [.switchAdvertisement(variant: nil)])
        #expect(engine.advertisements().first?.manufacturerData[0xFFFF]?.first == 0x40)
        // A late duplicate of the same timer is ignored.
        #expect(engine.handle(.timer("relock")).firedRules == [])
    }

    @Test(arguments: [[UInt8](), [0x01, 0x02], [UInt8](repeating: 0xAB, count: 21), [UInt8](repeating: 0, count: 19)])
    func malformedWritesGetInvalidCommand(value: [UInt8]) throws {
        var engine = try engine()
        _ = engine.handle(.connect(phone))
        let outcome = engine.handle(.write(characteristic: "rx", central: phone, value: value, withResponse: true))
        #expect(outcome.firedRules == ["malformed"])
        #expect(
            outcome.effects == [
                .notify(characteristic: "tx", value: padded([0x51, 0x62]), target: .central(phone), indicate: false)
            ])
    }

    @Test func sessionIsNewPerConnectionButKeepsBattery() throws {
        var engine = try engine([("variables.batteryMillivolts", "3000")])
        _ = engine.handle(.connect(phone))
        let first = engine.value(of: "session")
        _ = engine.handle(.disconnect(phone))
        _ = engine.handle(.connect(phone))
        let second = engine.value(of: "session")
        #expect(first != second)
        #expect(Array(first[2...3]) == [0xB8, 0x0B])
        #expect(Array(second[2...3]) == [0xB8, 0x0B])
    }

    @Test(arguments: [
        ("invalid-key", [UInt8]([0x51, 0x61])), ("invalid-command", [0x51, 0x62]), ("invalid-permission", [0x51, 0x63]),
        ("shutdown", [0x51, 0x64, 0x02, 0x01]), ("failed-lock", [0x51, 0x68]), ("failed-unlock", [0x51, 0x69]),
        ("failed-unshackle", [0x51, 0x6A]), ("nonsense", [0x51, 0x62]),
    ])
    func resultIsSelectableFromTheCommandLine(result: String, expected: [UInt8]) throws {
        var engine = try engine([("variables.result", result)])
        let outcome = engine.handle(.write(characteristic: "rx", central: phone, value: command, withResponse: true))
        #expect(outcome.notifications.map(\.value) == [padded(expected)])
        #expect(engine.state["lockState"] == .number(2))
    }

    @Test func jamTriggerMakesUnlocksFailAndAdvertisesJammed() throws {
        var engine = try engine()
        let jam = engine.handle(.trigger("jam", arguments: [:]))
        #expect(jam.firedRules == ["jam"])
        #expect(jam.effects == [.switchAdvertisement(variant: nil)])
        #expect(engine.advertisements().first?.manufacturerData[0xFFFF]?.first == 0x60)
        let outcome = engine.handle(.write(characteristic: "rx", central: phone, value: command, withResponse: false))
        #expect(outcome.notifications.map(\.value) == [padded([0x51, 0x69])])
        _ = engine.handle(.trigger("unjam", arguments: [:]))
        let after = engine.handle(.write(characteristic: "rx", central: phone, value: command, withResponse: false))
        #expect(after.notifications.map(\.value) == [padded([0x51, 0x60, 0xC2])])
    }

    @Test func serverPacketPrecedesTheAnswerWhenEnabled() throws {
        var engine = try engine([("variables.sendServerPacket", "true"), ("variables.hardwareCode", "2P")])
        #expect(engine.deviceName() == "NOKE2P_D01FA644B36F")
        let outcome = engine.handle(.write(characteristic: "rx", central: phone, value: command, withResponse: false))
        #expect(outcome.firedRules == ["server-packet", "success"])
        let values = outcome.notifications.map(\.value)
        #expect(values.count == 2)
        #expect(values.allSatisfy { $0.count == 20 })
        #expect(values.first?.prefix(2) == [0x50, 0xC2])
        #expect(values.last == padded([0x51, 0x60, 0xC2]))
    }

    @Test func sameSeedReplaysExactly() throws {
        var first = try engine([("variables.sendServerPacket", "true")])
        var second = try engine([("variables.sendServerPacket", "true")])
        let events: [EngineEvent] = [
            .connect(phone), .read(characteristic: "session", central: phone, offset: 0),
            .write(characteristic: "rx", central: phone, value: command, withResponse: false), .timer("relock"),
        ]
        for event in events { #expect(first.handle(event) == second.handle(event)) }
        first.reset()
        var replay: [EngineOutcome] = []
        for event in events { replay.append(first.handle(event)) }
        second.reset()
        for (event, expected) in zip(events, replay) { #expect(second.handle(event) == expected) }
    }
}
