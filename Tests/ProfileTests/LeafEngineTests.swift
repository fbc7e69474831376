import Testing

@testable import Profile

@Suite struct LeafEngineTests {
    let touchUUID = "00000000-1eaf-4000-8000-000000000003"
    let dUID = hex("0102030405060708")

    func engine(_ overrides: [(path: String, value: String)] = []) throws -> BehaviourEngine {
        let profile = try ProfileLoader.load(path: Paths.profile("leaf-reader.json"), overrides: overrides)
        return BehaviourEngine(profile: profile, environment: adapter)
    }

    func write(_ engine: inout BehaviourEngine, _ value: [UInt8]) -> EngineOutcome {
        engine.handle(.write(characteristic: "data", central: phone, value: value, withResponse: false))
    }

    @Test func handshakeAndCredential() throws {
        var engine = try engine()
        #expect(engine.deviceName() == "ETHSD01FA644B36F")
        #expect(engine.profile.characteristic("data")?.flags == [.writeWithoutResponse, .notify])
        _ = engine.handle(.connect(phone))
        _ = engine.handle(.subscribe(characteristic: "data", central: phone))

        let duid = write(&engine, hex("81 01 00 09 00") + dUID)
        #expect(duid.firedRules == ["duid"])
        #expect(duid.effects == [])
        #expect(engine.state["dUID"] == .bytes(dUID))

        let authRequest = write(&engine, hex("81 02 00 11 01") + [UInt8](repeating: 0x5A, count: 16))
        #expect(authRequest.firedRules == ["auth-request"])
        let answers = authRequest.notifications
        #expect(answers.count == 2)
        #expect(answers.map { Array($0.value.prefix(5)) } == [hex("81 03 00 11 00"), hex("81 02 00 11 01")])
        #expect(answers.allSatisfy { $0.value.count == 21 && $0.target == .central(phone) && !$0.indicate })

        let authResponse = write(&engine, hex("81 03 00 11 02") + [UInt8](repeating: 0x11, count: 16))
        #expect(authResponse.notifications.map(\.value) == [hex("81 00 00 02 02 00")])
        #expect(engine.state["authenticated"] == .bool(true))

        let credential = write(&engine, hex("81 04 00 05 03 DE AD BE EF"))
        #expect(credential.firedRules == ["credential"])
        let certificate = try #require(credential.notifications.first?.value)
        #expect(certificate.count == 5 + 98)
        #expect(Array(certificate.prefix(7)) == hex("81 05 00 63 03 62 01"))
        #expect(Array(certificate[7..<15]) == Array("LEAFRDR1".utf8))
        #expect(Array(certificate[15..<23]) == dUID)
        #expect(Array(certificate[55...]) == [UInt8](repeating: 0, count: 48))
        // length field = 1 + len(value)
        #expect(Int(certificate[2]) << 8 | Int(certificate[3]) == certificate.count - 4)
    }

    @Test func dUIDAndAuthRequestInOneWrite() throws {
        var engine = try engine()
        let outcome = write(&engine, hex("81 01 00 09 00") + dUID + hex("81 02 00 11 01") + [UInt8](repeating: 0, count: 16))
        #expect(outcome.firedRules == ["duid-and-auth-request"])
        #expect(outcome.notifications.map { $0.value[1] } == [0x03, 0x02])
        #expect(engine.state["dUID"] == .bytes(dUID))
    }

    @Test func errorsAndSequenceRotation() throws {
        var engine = try engine()
        #expect(write(&engine, hex("81 04 00 02 00 01")).notifications.map(\.value) == [hex("81 00 00 02 00 02")])
        #expect(write(&engine, hex("C1 02 00 11 00 00")).notifications.map(\.value) == [hex("81 00 00 02 01 01")])
        #expect(write(&engine, hex("00 11 22")).notifications.map(\.value) == [hex("81 00 00 02 02 03")])
        for _ in 0..<252 { _ = write(&engine, hex("00")) }
        // The 256th answer carries sequence 0xFF; the next wraps to 0.
        #expect(write(&engine, hex("00")).notifications.first?.value[4] == 0xFF)
        #expect(write(&engine, hex("00")).notifications.first?.value[4] == 0x00)
    }

    @Test func touchSwitchesTheAdvertisementForAWhile() throws {
        var engine = try engine([("variables.touchDuration", "2500")])
        #expect(engine.advertisements().first?.serviceUUIDs == ["00000000-1eaf-4000-8000-000000000001"])
        let touch = engine.handle(.trigger("touch", arguments: [:]))
        #expect(touch.effects == [
            .switchAdvertisement(variant: "touched"),
            .scheduleTimer(id: "touchEnd", after: .milliseconds(2500), repeating: false),
        ])
        #expect(engine.advertisementVariant == "touched")
        // Two 128-bit UUIDs do not fit legacy advertising: the touch UUID stands in for the credential UUID.
        #expect(engine.advertisements().first?.serviceUUIDs == [touchUUID])
        let end = engine.handle(.timer("touchEnd"))
        #expect(end.effects == [.switchAdvertisement(variant: nil)])
        #expect(engine.advertisements().first?.serviceUUIDs == ["00000000-1eaf-4000-8000-000000000001"])
    }

    @Test func placeholderUUIDsAreReplacedWithSet() throws {
        let real = "12345678-90ab-cdef-1234-567890abcdef"
        let engine = try engine([
            ("services.credential.uuid", real),
            ("services.credential.characteristics.data.uuid", "ABCD"),
            ("services.credential.characteristics.data.flags", #"["write", "notify"]"#),
        ])
        #expect(engine.profile.services.first?.uuid == real)
        #expect(engine.profile.characteristic("data")?.uuid == "0000abcd-0000-1000-8000-00805f9b34fb")
        #expect(engine.profile.characteristic("data")?.flags == [.write, .notify])
        #expect(engine.advertisements().first?.serviceUUIDs == [real])
    }
}
