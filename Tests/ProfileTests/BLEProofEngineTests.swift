import Bluetooth
import Testing

@testable import Profile

@Suite struct BLEProofEngineTests {
    let ok = Array(#"<{"action":"bleconfig","result":"ok"}>"#.utf8)
    let ng = Array(#"<{"action":"bleconfig","result":"ng"}>"#.utf8)

    func engine() throws -> BehaviourEngine {
        BehaviourEngine(profile: try ProfileLoader.load(path: Paths.profile("bleproof.json")), environment: adapter)
    }

    @Test func tableAndAdvertisement() throws {
        let engine = try engine()
        let service = try #require(engine.profile.services.first)
        #expect(service.uuid.description == "000018aa-0000-1000-8000-00805f9b34fb")
        #expect(
            service.characteristics.map(\.uuid.description) == [
                "00002bb0-0000-1000-8000-00805f9b34fb", "00002bb2-0000-1000-8000-00805f9b34fb",
                "00002bb1-0000-1000-8000-00805f9b34fb",
            ])
        #expect(service.characteristics.map(\.flags) == [[.read], [.write], [.indicate]])
        #expect(engine.value(of: "info") == Array("iPhone ABC".utf8))
        let advertisement = try #require(engine.advertisements().first)
        #expect(advertisement.localName == "BLEProof")
        #expect(advertisement.serviceUUIDs.map(\.description) == ["000018aa-0000-1000-8000-00805f9b34fb"])
    }

    @Test func rightPasswordIsIndicatedOk() throws {
        var engine = try engine()
        _ = engine.handle(.connect(phone))
        _ = engine.handle(.subscribe(characteristic: "status", central: phone))
        let write = Array(
            #"<{"thingName":"Daikin_d813997f4904","action":"bleconfig","ssid":"HUAWEI-1CAFB0","password":"1","setkey":"cfe18ee376b5fb4b14245ad92f167787"}>"#
                .utf8)
        #expect(write.count == 140)
        #expect(ok.count == 38)
        let outcome = engine.handle(.write(characteristic: "config", central: phone, value: write, withResponse: true))
        #expect(outcome.firedRules == ["password-ok"])
        #expect(outcome.effects == [.notify(characteristic: "status", value: ok, target: .central(phone), indicate: true)])
        #expect(outcome.reply == nil)  // the runtime answers success by default
    }

    @Test(arguments: [
        #"<{"password":"2"}>"#, #"<{"password":1}>"#, #"<{"ssid":"x"}>"#, "<not json>", "", #"{"password":"1"}x"#,
        "\u{FF}",
    ])
    func anythingElseIsIndicatedNg(text: String) throws {
        var engine = try engine()
        let outcome = engine.handle(.write(characteristic: "config", central: phone, value: Array(text.utf8), withResponse: true))
        #expect(outcome.firedRules == ["password-ng"])
        #expect(outcome.effects == [.notify(characteristic: "status", value: ng, target: .central(phone), indicate: true)])
    }

    @Test func invalidUTF8IsNg() throws {
        var engine = try engine()
        let outcome = engine.handle(.write(characteristic: "config", central: phone, value: [0x3C, 0xFF, 0xFE, 0x3E], withResponse: true))
        #expect(outcome.firedRules == ["password-ng"])
    }

    @Test func bracketsAreRemovedOnlyOnce() throws {
        var engine = try engine()
        // First '<' and first '>' removed anywhere: "{...}" survives even with the brackets in odd places.
        let outcome = engine.handle(
            .write(characteristic: "config", central: phone, value: Array(#"{"password":"1"<>}"#.utf8), withResponse: true))
        #expect(outcome.firedRules == ["password-ok"])
    }
}
