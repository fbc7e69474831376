import Bluetooth
import Testing

@testable import Profile

/// `frames`: writes joined and cut into length-prefixed frames before rules see them.
@Suite struct FrameTests {
    /// Frames `[0xA5][length u8][length bytes]`, echoed whole; a write with response answered by its first frame.
    static let json = #"""
        {"format": 1,
         "services": [{"id": "s", "uuid": "12345678-0000-4000-8000-000000000001", "characteristics": [
           {"id": "rx", "uuid": "12345678-0000-4000-8000-000000000002", "flags": ["write", "write-without-response"],
            "maxLength": 12, "frames": {"lengthOffset": 1, "lengthSize": 1, "headerSize": 2, "start": ["0xA5"]}},
           {"id": "tx", "uuid": "12345678-0000-4000-8000-000000000003", "flags": ["notify"]}]}],
         "rules": [
           {"id": "bad", "on": {"write": "rx", "prefix": "A5 00"}, "do": {"fail": "invalid-value-length"}, "stop": true},
           {"id": "echo", "on": {"write": "rx", "prefix": "A5"}, "do": {"notify": "tx", "value": "{request}"}},
           {"id": "other", "on": {"write": "rx"}, "otherwise": true, "do": {"notify": "tx", "value": "EE {request}"}}]}
        """#

    func engine() throws -> BehaviourEngine {
        var engine = BehaviourEngine(profile: try ProfileLoader.load(json: Self.json, file: "frames.json"), environment: adapter)
        _ = engine.handle(.connect(phone))
        _ = engine.handle(.subscribe(characteristic: "tx", central: phone))
        return engine
    }

    func write(_ engine: inout BehaviourEngine, _ value: String, withResponse: Bool = false) -> EngineOutcome {
        engine.handle(.write(characteristic: "rx", central: phone, value: hex(value), withResponse: withResponse))
    }

    @Test func piecesAreJoinedAndWritesCut() throws {
        var engine = try engine()
        #expect(write(&engine, "A5") == EngineOutcome())
        #expect(write(&engine, "03 01") == EngineOutcome())
        #expect(write(&engine, "02 03 A5 01").notifications.map(\.value) == [hex("A5 03 01 02 03")])
        #expect(write(&engine, "09 A5 02 07 08").notifications.map(\.value) == [hex("A5 01 09"), hex("A5 02 07 08")])
    }

    @Test func whatCannotBeAFrameGoesAsWritten() throws {
        var engine = try engine()
        #expect(write(&engine, "42 01 02").notifications.map(\.value) == [hex("EE 42 01 02")], "another start byte")
        // 2 + 0x20 bytes is over maxLength 12.
        #expect(write(&engine, "A5 20 01").firedRules == ["echo"])
        #expect(write(&engine, "A5 01 01 FF").notifications.map(\.value) == [hex("A5 01 01"), hex("EE FF")])
        // Longer than maxLength: refused as any such write, nothing held.
        #expect(
            write(&engine, "A5 01 00 00 00 00 00 00 00 00 00 00 00", withResponse: true).effects == [.reply(.error(.invalidValueLength))])
        #expect(engine.heldFrames.isEmpty)
    }

    @Test func aWriteWithResponseGetsTheFirstReply() throws {
        var engine = try engine()
        let outcome = write(&engine, "A5 00 A5 00", withResponse: true)
        #expect(outcome.firedRules == ["bad", "bad"])
        #expect(outcome.effects.filter { if case .reply = $0 { true } else { false } } == [.reply(.error(.invalidValueLength))])
    }

    @Test func theHeldStartIsPerCentralAndGoesWithTheLink() throws {
        var engine = try engine()
        let other = CentralID(address: BluetoothAddress("AA:BB:CC:DD:EE:FF")!)
        _ = engine.handle(.connect(other))
        _ = write(&engine, "A5 02 01")
        #expect(
            engine.handle(.write(characteristic: "rx", central: other, value: hex("A5 01 07"), withResponse: false))
                .notifications.map(\.value) == [hex("A5 01 07")])
        _ = engine.handle(.disconnect(phone))
        #expect(engine.heldFrames.isEmpty)
    }

    @Test func validation() {
        func problems(_ frames: String) -> [String] {
            let json = Self.json.replacingOccurrences(
                of: #"{"lengthOffset": 1, "lengthSize": 1, "headerSize": 2, "start": ["0xA5"]}"#, with: frames)
            return ProfileValidator.validate(json: json, file: "frames.json").map(\.description)
        }
        #expect(
            problems(#"{"lengthOffset": 2, "lengthSize": 2, "headerSize": 3}"#).contains {
                $0.contains("frames.headerSize: the header (3 bytes) must hold the length field (bytes 2..<4)")
            })
        #expect(problems(#"{"lengthOffset": 0, "lengthSize": 3, "headerSize": 3}"#).contains { $0.contains("frames.lengthSize") })
        #expect(problems(#"{"lengthOffset": 0, "lengthSize": 1}"#).contains { $0.contains("headerSize") })
        #expect(
            problems(#"{"lengthOffset": 0, "lengthSize": 1, "headerSize": 1, "start": [256]}"#).contains { $0.contains("frames.start[0]") })
    }
}
