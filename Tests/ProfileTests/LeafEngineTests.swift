import Bluetooth
import Testing

@testable import Profile

@Suite struct LeafEngineTests {
    let touchUUID = "00000000-1eaf-4000-8000-000000000003"
    let credentialUUID = "3420d81a-af2c-11e5-bf7f-feff819cdc9f"
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
        #expect(outcome.firedRules == ["duid", "auth-request"], "one write, two frames: each handled as a frame")
        #expect(outcome.notifications.map { $0.value[1] } == [0x03, 0x02])
        #expect(engine.state["dUID"] == .bytes(dUID))
    }

    /// At ATT MTU 23 a write carries at most 20 bytes: the phone's frames come in pieces, joined by the
    /// frame's length field; a piece that completes one frame and starts the next hands over the first.
    @Test func framesInPiecesOfTwentyBytes() throws {
        var engine = try engine()
        _ = engine.handle(.connect(phone))
        _ = engine.handle(.subscribe(characteristic: "data", central: phone))
        let hello = hex("81 01 00 09 00") + dUID + hex("81 02 00 11 01") + [UInt8](repeating: 0x5A, count: 16)
        var fired: [String] = []
        var notified: [[UInt8]] = []
        for start in stride(from: 0, to: hello.count, by: 20) {
            let outcome = write(&engine, Array(hello[start..<min(start + 20, hello.count)]))
            fired += outcome.firedRules
            notified += outcome.notifications.map(\.value)
        }
        #expect(fired == ["duid", "auth-request"])
        #expect(notified.map { Array($0.prefix(2)) } == [hex("81 03"), hex("81 02")])
        #expect(engine.state["dUID"] == .bytes(dUID))

        // AUTH_RSP (21 bytes) as 20 + 1: nothing until the last byte.
        let authResponse = hex("81 03 00 11 02") + [UInt8](repeating: 0x11, count: 16)
        #expect(write(&engine, Array(authResponse.prefix(20))) == EngineOutcome())
        #expect(write(&engine, Array(authResponse.suffix(1))).notifications.map(\.value) == [hex("81 00 00 02 02 00")])
        #expect(engine.state["authenticated"] == .bool(true))

        // A credential payload of 400 bytes (the longest message) in 20-byte pieces.
        let payload = hex("81 04 01 91 03") + [UInt8](repeating: 0xC3, count: 400)
        var certificate: [[UInt8]] = []
        for start in stride(from: 0, to: payload.count, by: 20) {
            certificate += write(&engine, Array(payload[start..<min(start + 20, payload.count)])).notifications.map(\.value)
        }
        #expect(certificate.count == 1 && certificate.first?.count == 103)
    }

    /// What cannot be a frame reaches the rules at once, as written: a length beyond the 400-byte message
    /// (405-byte frame), a start byte that is neither 0x81 nor 0xC1. A partial frame is forgotten on disconnect.
    @Test func whatCannotBeAFrameIsHandledAsWritten() throws {
        var engine = try engine()
        _ = engine.handle(.connect(phone))
        _ = engine.handle(.subscribe(characteristic: "data", central: phone))
        let tooLong = write(&engine, hex("81 04 01 92 00 00"))  // 4 + 402 bytes > 405
        #expect(tooLong.firedRules == ["credential-unauthenticated"], "handled as the 6 bytes written")
        #expect(write(&engine, hex("42 01 00 09")).firedRules == ["invalid"])
        #expect(write(&engine, hex("81 01 00")) == EngineOutcome(), "the start of a frame is held")
        _ = engine.handle(.disconnect(phone))
        _ = engine.handle(.connect(phone))
        _ = engine.handle(.subscribe(characteristic: "data", central: phone))
        #expect(write(&engine, hex("81 00 00 02 00 00")).firedRules == ["invalid"], "nothing held from before")
        #expect(engine.heldFrames.isEmpty)
    }

    @Test func errorsAndSequenceRotation() throws {
        var engine = try engine()
        #expect(write(&engine, hex("81 04 00 02 00 01")).notifications.map(\.value) == [hex("81 00 00 02 00 02")])
        #expect(write(&engine, hex("C1 02 00 02 00 00")).notifications.map(\.value) == [hex("81 00 00 02 01 01")])
        #expect(write(&engine, hex("00 11 22")).notifications.map(\.value) == [hex("81 00 00 02 02 03")])
        for _ in 0..<252 { _ = write(&engine, hex("00")) }
        // The 256th answer carries sequence 0xFF; the next wraps to 0.
        #expect(write(&engine, hex("00")).notifications.first?.value[4] == 0xFF)
        #expect(write(&engine, hex("00")).notifications.first?.value[4] == 0x00)
    }

    @Test func touchSwitchesTheAdvertisementForAWhile() throws {
        var engine = try engine([("variables.touchDuration", "2500")])
        #expect(engine.advertisements().first?.serviceUUIDs.map(\.description) == [credentialUUID])
        let touch = engine.handle(.trigger("touch", arguments: [:]))
        #expect(
            touch.effects == [
                .switchAdvertisement(variant: "touched"),
                .scheduleTimer(id: "touchEnd", after: .milliseconds(2500), repeating: false),
            ])
        #expect(engine.advertisementVariant == "touched")
        // Two 128-bit UUIDs do not fit legacy advertising: the touch UUID stands in for the credential UUID.
        #expect(engine.advertisements().first?.serviceUUIDs.map(\.description) == [touchUUID])
        // The identity advertisement has no touched variant: it keeps the reader UID meanwhile.
        #expect(engine.advertisements().last?.serviceData == [BluetoothUUID(credentialUUID)!: Array("LEAFRDR1".utf8)])
        let end = engine.handle(.timer("touchEnd"))
        #expect(end.effects == [.switchAdvertisement(variant: nil)])
        #expect(engine.advertisements().first?.serviceUUIDs.map(\.description) == [credentialUUID])
    }

    @Test func publicUUIDsAndTheReaderUIDInServiceData() throws {
        let engine = try engine([("variables.readerUID", #"{"hex": "0102030405060708"}"#)])
        #expect(engine.profile.services.first?.uuid.description == credentialUUID)
        #expect(engine.profile.characteristic("data")?.uuid.description == "ee8732b3-2d52-409b-9084-70ad31f6c790")
        let advertisements = engine.advertisements()
        #expect(advertisements.map { $0.serviceUUIDs.map(\.description) } == [[credentialUUID], []])
        #expect(advertisements.map(\.serviceData) == [[:], [BluetoothUUID(credentialUUID)!: hex("0102030405060708")]])
        #expect(advertisements.map(\.localName) == ["ETHSD01FA644B36F", "ETHSD01FA644B36F"])
    }

    @Test func brivoVariantIsNamedBRVO() throws {
        let profile = try ProfileLoader.load(path: Paths.profile("leaf-reader-brvo.json"))
        let engine = BehaviourEngine(profile: profile, environment: adapter)
        #expect(engine.deviceName() == "BRVO")
        #expect(engine.advertisements().map(\.localName) == ["BRVO", "BRVO"])
        #expect(engine.advertisements().last?.serviceData == [BluetoothUUID(credentialUUID)!: Array("LEAFRDR1".utf8)])
    }

    @Test func touchPlaceholderIsReplacedWithOneSet() throws {
        let real = "12345678-90ab-cdef-1234-567890abcdef"
        var engine = try engine([("advertisements.discovery.variants.touched.serviceUUIDs", #"["\#(real)"]"#)])
        _ = engine.handle(.trigger("touch", arguments: [:]))
        #expect(engine.advertisements().first?.serviceUUIDs.map(\.description) == [real])
    }
}
