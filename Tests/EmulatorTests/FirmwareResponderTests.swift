import Bluetooth
import Digest
import Foundation
import McuMgr
import Profile
import Testing

@testable import BlueZ
@testable import Emulator

/// A profile with `"firmware"`: its SMP characteristic is answered by the firmware target, behind the same faults as
/// any responder; writes are put back together per central, answers go to that central only, a reset reboots the
/// device into what MCUboot chose, and the revision characteristic follows.
@Suite struct FirmwareResponderTests {
    static let profile = """
        { "format": 1,
          "services": [
            { "id": "smpService", "uuid": "8D53DC1D-1DB7-4CD3-868B-8A527460AA84", "characteristics": [
              { "id": "smp", "uuid": "DA2E7828-FBCE-4E01-AE9E-261174997C48", "flags": ["write-without-response", "notify"] } ] },
            { "id": "info", "uuid": "180a", "characteristics": [
              { "id": "fw", "uuid": "2a26", "flags": ["read"], "value": { "utf8": "?" } } ] } ],
          "firmware": { "characteristic": "smp", "version": "1.0.0", "revision": "fw", "bootTime": 0, "bufferSize": 512 } }
        """

    /// What reaches the centrals: each notification (`pieces`), and the SMP packets a client joins from them by the
    /// header's length, per central (`sent`).
    final class Outbox: NotificationSender, @unchecked Sendable {
        var pieces: [(central: NotificationTarget, value: [UInt8])] = []
        var sent: [(central: NotificationTarget, value: [UInt8])] = []
        private var partial: [BluetoothAddress: [UInt8]] = [:]
        func send(_ notification: OutgoingNotification, in runtime: isolated Emulator) async {
            pieces.append((notification.target, notification.value))
            guard let address = notification.target.address else { return sent.append((notification.target, notification.value)) }
            var bytes = partial[address, default: []] + notification.value
            while let header = SMPHeader(bytes), bytes.count >= SMPHeader.size + Int(header.length) {
                let count = SMPHeader.size + Int(header.length)
                sent.append((notification.target, Array(bytes.prefix(count))))
                bytes.removeFirst(count)
            }
            partial[address] = bytes
        }
    }

    static let alice = BluetoothAddress("AA:BB:CC:DD:EE:01")!
    static let bob = BluetoothAddress("AA:BB:CC:DD:EE:02")!

    static func emulator(profile: String = Self.profile) async throws -> (Emulator, EventLog, Outbox) {
        let log = try EventLog(format: .text)
        let emulator = try Emulator(profile: try ProfileLoader.load(json: profile, file: "smp.json"), options: EmulatorOptions(), log: log)
        let outbox = Outbox()
        await Self.deliver(through: outbox, emulator)
        return (emulator, log, outbox)
    }

    /// The same responders, with `outbox` in place of bluetoothd's delivery.
    static func deliver(through outbox: Outbox, _ emulator: isolated Emulator) {
        emulator.answer(with: emulator.pipeline.responder, delivery: outbox)
    }

    static func runningConfirmed(_ emulator: isolated Emulator) -> Bool? { emulator.firmwareResponder?.target.confirmed }
    static func target(_ emulator: isolated Emulator) -> FirmwareTarget? { emulator.firmwareResponder?.target }

    static func write(_ bytes: [UInt8], from central: BluetoothAddress) -> GattWriteRequest {
        GattWriteRequest(
            attribute: GattAttributeID(characteristic: "smp"), value: bytes, offset: 0, kind: .command, bluetoothdAnswered: true,
            prepareAuthorize: false, context: GattRequestContext(central: central, mtu: ATTMTU(rawValue: 23)))
    }

    static func request(group: UInt16, command: UInt8, read: Bool = false, sequence: UInt8, _ body: CBOR) -> [UInt8] {
        SMPPacket(request: read ? .read : .write, group: group, command: command, sequence: sequence, body: body).bytes
    }

    static func answer(_ value: [UInt8]) throws -> (SMPHeader, CBOR) {
        let header = try #require(SMPHeader(value))
        return (header, try CBOR(decoding: Array(value.dropFirst(SMPHeader.size))))
    }

    @Test func requestsSplitAcrossWritesAreAnsweredToTheirCentral() async throws {
        let (emulator, log, outbox) = try await Self.emulator()
        #expect(await emulator.engine.value(of: "fw") == Array("1.0.0".utf8), "the revision says the running version from the start")
        let echo = Self.request(group: 0, command: 0, sequence: 5, .map(["d": .text(String(repeating: "x", count: 60))]))
        let params = Self.request(group: 0, command: 6, read: true, sequence: 9, .map([:]))
        // Alice's echo in 20-byte writes, Bob's params in between.
        for start in stride(from: 0, to: echo.count, by: 20) {
            try await emulator.write(Self.write(Array(echo[start..<min(start + 20, echo.count)]), from: Self.alice))
            if start == 20 { try await emulator.write(Self.write(params, from: Self.bob)) }
        }
        #expect(outbox.sent.count == 2)
        #expect(outbox.sent[0].central == .central(CentralID(address: Self.bob)))
        #expect(try Self.answer(outbox.sent[0].value).1 == .map(["buf_size": .int(512), "buf_count": .int(4)]))
        #expect(outbox.sent[1].central == .central(CentralID(address: Self.alice)))
        let (header, body) = try Self.answer(outbox.sent[1].value)
        #expect(header.sequence == 5 && header.operation == .writeResponse)
        #expect(body == .map(["r": .text(String(repeating: "x", count: 60))]))
        #expect(log.events(since: 0).contains { $0.kind == .firmware && $0.detail?.hasPrefix("smp: os echo seq 5") == true })
    }

    @Test func aPacketOverTheBufferIsRefusedWithMessageTooLong() async throws {
        let (emulator, _, outbox) = try await Self.emulator()
        let long = Self.request(group: 0, command: 0, sequence: 1, .map(["d": .text(String(repeating: "y", count: 600))]))
        try await emulator.write(Self.write(long, from: Self.alice))
        let first = try #require(outbox.sent.first)
        #expect(try Self.answer(first.value).1 == .map(["rc": .int(7)]))
    }

    @Test func anUploadTestAndResetBootTheNewImage() async throws {
        let (emulator, log, outbox) = try await Self.emulator()
        // An image imgtool made (Tests/McuMgrTests/Fixtures/README.md).
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("McuMgrTests/Fixtures/app-1.2.3+4.bin")
        let image = Array(try Data(contentsOf: file))
        var offset = 0
        var sequence: UInt8 = 0
        while offset < image.count {
            sequence &+= 1
            let data = Array(image[offset..<min(offset + 300, image.count)])
            let body: CBOR =
                offset == 0
                ? .map(["len": .int(image.count), "off": .int(0), "data": .bytes(data)])
                : .map(["off": .int(offset), "data": .bytes(data)])
            try await emulator.write(Self.write(Self.request(group: 1, command: 1, sequence: sequence, body), from: Self.alice))
            let last = try #require(outbox.sent.last)
            offset = try #require(try Self.answer(last.value).1["off"]?.int)
        }
        // Each chunk's `firmware` event says how far the upload is, up to the whole image.
        let progress = log.events(since: 0).filter { $0.kind == .firmware }.compactMap(\.progress)
        #expect(progress.count == (image.count + 299) / 300 && progress.allSatisfy { $0.total == image.count })
        #expect(progress.map(\.done) == progress.map(\.done).sorted() && progress.last?.done == image.count)
        let hash = try McuBootImage(image).hash
        try await emulator.write(
            Self.write(Self.request(group: 1, command: 0, sequence: 200, .map(["hash": .bytes(hash)])), from: Self.alice))
        try await emulator.write(Self.write(Self.request(group: 0, command: 5, sequence: 201, .map([:])), from: Self.alice))
        let resetAnswer = try #require(outbox.sent.last)
        #expect(try Self.answer(resetAnswer.value).1 == .map([:]), "the reset is answered before the device resets")
        // The device resets, is gone for the boot time (0 here) and boots the tested image: the log says so.
        for await event in log.subscribe(since: 0) where event.detail?.hasPrefix("firmware: booted") == true {
            #expect(event.detail?.hasPrefix("firmware: booted 1.2.3.4, swapped in for test") == true, "\(event.detail ?? "")")
            break
        }
        #expect(await emulator.engine.value(of: "fw") == Array("1.2.3.4".utf8))
        // At ATT MTU 23 every piece is at most 18 bytes (MTU − 5: what bluetoothd sends whole to any central).
        #expect(outbox.pieces.allSatisfy { $0.value.count <= 18 } && outbox.pieces.contains { $0.value.count == 18 })
        #expect(await Self.runningConfirmed(emulator) == false)
        // GET /v1/firmware shows the slots as a state read does.
        let status = try await emulator.firmwareStatus()
        #expect(status.slots.map(\.version) == ["1.2.3.4", "1.0.0"])
        #expect(status.slots.map(\.confirmed) == [false, true] && status.slots.map(\.active) == [true, false])
        #expect(status.slots[0].size == image.count && status.upload == nil && !status.rebooting)
    }

    /// `firmware.services`: a service only versions from 1.2.0 have is out of the table while 1.0.0 runs, in it once
    /// the device boots 1.2.3.4, and out again when MCUboot reverts the unconfirmed image; a service before 1.1.0
    /// the other way round. Each change is a `firmware` event.
    @Test func theBootedVersionDecidesWhichServicesAreInTheTable() async throws {
        let profile = Self.profile.replacingOccurrences(
            of: #""bufferSize": 512 } }"#,
            with: #"""
                "bufferSize": 512,
                  "services": [ { "service": "extra", "from": "1.2.0" }, { "service": "legacy", "before": "1.1.0" } ] },
                  "$comment": "extra and legacy follow" }
                """#
        ).replacingOccurrences(
            of: #"{ "id": "info","#,
            with: #"""
                { "id": "extra", "uuid": "12345678-0000-4000-8000-0000000000aa", "characteristics": [] },
                { "id": "legacy", "uuid": "12345678-0000-4000-8000-0000000000bb", "characteristics": [] },
                { "id": "info",
                """#)
        let (emulator, log, outbox) = try await Self.emulator(profile: profile)
        #expect(await emulator.status().services.map(\.id) == ["smpService", "legacy", "info"])
        let image = try Self.fixtureImage()
        _ = try await Self.upload(image, to: emulator, outbox: outbox)
        let hash = try McuBootImage(image).hash
        try await emulator.write(
            Self.write(Self.request(group: 1, command: 0, sequence: 200, .map(["hash": .bytes(hash)])), from: Self.alice))
        /// Resets the device; the `change`th table change's event.
        func reset(_ sequence: UInt8, until change: Int) async throws -> String? {
            try await emulator.write(Self.write(Self.request(group: 0, command: 5, sequence: sequence, .map([:])), from: Self.alice))
            var seen = 0
            for await event in log.subscribe(since: 0) where event.detail?.contains("has another GATT table") == true {
                seen += 1
                if seen == change { return event.detail }
            }
            return nil
        }
        let upgraded = try await reset(201, until: 1)
        #expect(upgraded?.hasPrefix("firmware: 1.2.3.4 has another GATT table: extra added; legacy removed") == true, "\(upgraded ?? "")")
        #expect(await emulator.status().services.map(\.id) == ["smpService", "extra", "info"])
        let reverted = try await reset(202, until: 2)
        #expect(reverted?.hasPrefix("firmware: 1.0.0 has another GATT table: legacy added; extra removed") == true, "\(reverted ?? "")")
        #expect(await emulator.status().services.map(\.id) == ["smpService", "legacy", "info"])
        #expect(log.events(since: 0).filter { $0.detail?.contains("has another GATT table") == true }.allSatisfy { $0.kind == .firmware })
    }

    @Test func versionedServicesAreCheckedWhereTheyAreWritten() {
        func with(_ services: String, present: String = "") -> String {
            Self.profile.replacingOccurrences(of: #""bufferSize": 512 } }"#, with: #""bufferSize": 512, "services": \#(services) } }"#)
                .replacingOccurrences(
                    of: #"{ "id": "info","#,
                    with: #"{ "id": "extra", "uuid": "180f", \#(present) "characteristics": [] }, { "id": "info","#)
        }
        let cases: [(String, String, String)] = [
            (with(#"[{"service": "extr", "from": "1.1.0"}]"#), "firmware.services[0].service: unknown service \"extr\"", "extra"),
            (with(#"[{"service": "extra"}]"#), "firmware.services[0]: service \"extra\" names no version", "from"),
            (with(#"[{"service": "extra", "from": "1.2.0", "before": "1.2.0"}]"#), "is never present", "before"),
            (with(#"[{"service": "extra", "from": "1.2"}]"#), "firmware.services[0].from: \"1.2\" is not an image version", ""),
            (with(#"[{"service": "extra", "from": "1.1.0"}, {"service": "extra", "before": "2.0.0"}]"#), "is named twice", ""),
            (with(#"[{"service": "extra", "from": "1.1.0"}]"#, present: #""present": false,"#), "also marked \"present\": false", ""),
            (with(#"[{"service": "smpService", "from": "1.1.0"}]"#), "holds the SMP characteristic", ""),
            (with(#"[{"service": "info", "before": "2.0.0"}]"#), "holds the revision characteristic \"fw\"", ""),
            (
                with(#"[], "serviceChanged": false"#), "firmware.serviceChanged: a reboot into a changed table without Service Changed",
                "bluetoothd"
            ),
        ]
        for (json, message, hint) in cases {
            let problems = Self.problems(json)
            #expect(problems.contains(message) && (hint.isEmpty || problems.contains(hint)), "\(message): \(problems)")
        }
        #expect(Self.problems(with(#"[{"service": "extra", "from": "1.1.0", "before": "2.0.0"}], "serviceChanged": true"#)).isEmpty)
    }

    /// A second central's upload while one is under way is answered busy and disturbs nothing; once the first central
    /// has left, another may resume its upload from where it stopped.
    @Test func aSecondCentralsUploadIsBusyUntilTheFirstLeaves() async throws {
        let (emulator, _, outbox) = try await Self.emulator()
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("McuMgrTests/Fixtures/app-1.2.3+4.bin")
        let image = Array(try Data(contentsOf: file))
        let first = CBOR.map([
            "len": .int(image.count), "off": .int(0), "sha": .bytes(Array(repeating: 1, count: 32)),
            "data": .bytes(Array(image.prefix(300))),
        ])
        try await emulator.write(Self.write(Self.request(group: 1, command: 1, sequence: 1, first), from: Self.alice))
        #expect(try Self.answer(try #require(outbox.sent.last).value).1 == .map(["off": .int(300)]))
        let other = CBOR.map(["len": .int(image.count), "off": .int(0), "data": .bytes(Array(image.prefix(300)))])
        try await emulator.write(Self.write(Self.request(group: 1, command: 1, sequence: 1, other), from: Self.bob))
        #expect(try Self.answer(try #require(outbox.sent.last).value).1 == .map(["rc": .int(10)]))
        // Bob may still read the state; Alice's upload goes on.
        try await emulator.write(Self.write(Self.request(group: 1, command: 0, read: true, sequence: 2, .map([:])), from: Self.bob))
        #expect(try Self.answer(try #require(outbox.sent.last).value).1["images"] != nil)
        let next = CBOR.map(["off": .int(300), "data": .bytes(Array(image[300..<600]))])
        try await emulator.write(Self.write(Self.request(group: 1, command: 1, sequence: 2, next), from: Self.alice))
        #expect(try Self.answer(try #require(outbox.sent.last).value).1 == .map(["off": .int(600)]))
        // Alice leaves mid-upload: Bob resumes it with the same sha.
        await emulator.centralEvent(.disconnected(address: Self.alice))
        let resume = CBOR.map([
            "len": .int(image.count), "off": .int(0), "sha": .bytes(Array(repeating: 1, count: 32)),
            "data": .bytes(Array(image.prefix(300))),
        ])
        try await emulator.write(Self.write(Self.request(group: 1, command: 1, sequence: 3, resume), from: Self.bob))
        #expect(try Self.answer(try #require(outbox.sent.last).value).1 == .map(["off": .int(600)]))
    }

    static func fixtureImage() throws -> [UInt8] {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("McuMgrTests/Fixtures/app-1.2.3+4.bin")
        return Array(try Data(contentsOf: file))
    }

    static func fault(_ json: String) throws -> FaultSpec {
        try FaultSpecDecoder.spec(try JSONParser.parse(json, file: "fault.json"))
    }

    /// Uploads `image` in 300-byte chunks (the first with `len` and its sha) from alice until an answer has no `off`,
    /// the offset stops moving or the image is all sent; the last answer, and how many answers came.
    static func upload(_ image: [UInt8], to emulator: Emulator, outbox: Outbox) async throws -> (answer: CBOR?, answers: Int) {
        var offset = 0
        var sequence: UInt8 = 0
        let before = outbox.sent.count
        while offset < image.count {
            sequence &+= 1
            let data = Array(image[offset..<min(offset + 300, image.count)])
            let body: CBOR =
                offset == 0
                ? .map(["len": .int(image.count), "off": .int(0), "sha": .bytes(SHA256.hash(image)), "data": .bytes(data)])
                : .map(["off": .int(offset), "data": .bytes(data)])
            let count = outbox.sent.count
            try await emulator.write(Self.write(Self.request(group: 1, command: 1, sequence: sequence, body), from: Self.alice))
            guard outbox.sent.count > count, let last = outbox.sent.last else { return (nil, outbox.sent.count - before) }
            let answer = try Self.answer(last.value).1
            guard let next = answer["off"]?.int, next > offset else { return (answer, outbox.sent.count - before) }
            offset = next
        }
        return (try Self.answer(try #require(outbox.sent.last).value).1, outbox.sent.count - before)
    }

    /// The firmware faults (`on: upload`, `confirm`, `reset`), each as the client sees it: a refusal with the group's
    /// code from a share of the image on, an upload chunk never answered, an image kept with a wrong hash, a refused
    /// confirm, a pending image lost at the reset; the log names each fault.
    @Test func firmwareFaultsAreWhatTheClientSees() async throws {
        let (emulator, log, outbox) = try await Self.emulator()
        let image = try Self.fixtureImage()
        // Refused at 60 % with flash-write-failed (12): the chunks before it are taken.
        let refuse = try await emulator.addFault(try Self.fault(#"{"on": "upload", "percent": 60, "smpError": 12, "count": 1}"#))
        let refused = try await Self.upload(image, to: emulator, outbox: outbox)
        #expect(refused.answer == .map(["err": .map(["group": .int(1), "rc": .int(12)])]))
        let reached = await Self.target(emulator)?.uploadProgress?.offset ?? 0
        #expect(reached * 100 / image.count < 60 && reached * 100 / image.count >= 40, "\(reached) of \(image.count)")
        _ = await emulator.removeFault(id: refuse.id)
        // Not answered from 50 % on: the client's request times out.
        let silent = try await emulator.addFault(try Self.fault(#"{"on": "upload", "percent": 50, "drop": true}"#))
        let dropped = try await Self.upload(image, to: emulator, outbox: outbox)
        #expect(dropped.answer == nil)
        _ = await emulator.removeFault(id: silent.id)
        // The whole image with a wrong hash: match false, state read shows another hash, testing it by its own: 8.
        _ = try await emulator.addFault(try Self.fault(#"{"on": "upload", "wrongHash": true, "count": 1}"#))
        let whole = try await Self.upload(image, to: emulator, outbox: outbox)
        #expect(whole.answer?["match"] == .bool(false))
        let hash = try McuBootImage(image).hash
        let kept = try #require(await Self.target(emulator)?.secondary)
        #expect(kept.hash != hash && kept.hash.count == 32)
        try await emulator.write(
            Self.write(Self.request(group: 1, command: 0, sequence: 100, .map(["hash": .bytes(hash)])), from: Self.alice))
        #expect(try Self.answer(try #require(outbox.sent.last).value).1 == .map(["err": .map(["group": .int(1), "rc": .int(8)])]))
        // Tested by the hash the device shows, reset, booted unconfirmed; the confirm is refused (rc 4 of its group).
        try await emulator.write(
            Self.write(Self.request(group: 1, command: 0, sequence: 101, .map(["hash": .bytes(kept.hash)])), from: Self.alice))
        try await emulator.write(Self.write(Self.request(group: 0, command: 5, sequence: 102, .map([:])), from: Self.alice))
        for await event in log.subscribe(since: 0) where event.detail?.hasPrefix("firmware: booted") == true { break }
        _ = try await emulator.addFault(try Self.fault(#"{"on": "confirm", "smpError": 4}"#))
        try await emulator.write(
            Self.write(Self.request(group: 1, command: 0, sequence: 103, .map(["confirm": .bool(true)])), from: Self.alice))
        #expect(try Self.answer(try #require(outbox.sent.last).value).1 == .map(["err": .map(["group": .int(1), "rc": .int(4)])]))
        #expect(await Self.runningConfirmed(emulator) == false)
        let events = log.events.filter { $0.kind == .fault }.compactMap(\.detail)
        #expect(events.contains { $0.contains("refuse with SMP error 12 (upload #") }, "\(events)")
        #expect(events.contains { $0.contains("drop (upload #") }, "\(events)")
        #expect(events.contains { $0.contains("keep the uploaded image with a wrong hash") }, "\(events)")
        #expect(events.contains { $0.contains("refuse with SMP error 4 (confirm #1)") }, "\(events)")
    }

    /// `disconnect` at 50 %: the chunk that reaches it is answered, and nothing the central writes after it is taken
    /// (the device let it go; bluetoothd may take seconds to drop the link).
    @Test func aDisconnectFaultTakesNothingMoreFromThatCentral() async throws {
        let (emulator, log, outbox) = try await Self.emulator()
        let image = try Self.fixtureImage()
        _ = try await emulator.addFault(try Self.fault(#"{"on": "upload", "percent": 50, "disconnect": true, "count": 1}"#))
        let cut = try await Self.upload(image, to: emulator, outbox: outbox)
        #expect(cut.answer == nil, "the chunk after the fault is not answered")
        let last = try #require(outbox.sent.last)
        let reached = try #require(try Self.answer(last.value).1["off"]?.int)
        #expect(reached * 100 / image.count >= 50 && reached < image.count, "\(reached) of \(image.count)")
        #expect(await Self.target(emulator)?.uploadProgress?.offset == reached, "the chunk after it was not taken")
        #expect(log.events.contains { $0.kind == .fault && $0.detail?.contains("disconnect (upload #") == true })
    }

    /// `losePending` at a reset with a tested image waiting: the device boots the running image again, slot 1 empty.
    @Test func aLostPendingImageIsNotSwappedIn() async throws {
        let (emulator, log, outbox) = try await Self.emulator()
        let image = try Self.fixtureImage()
        _ = try await Self.upload(image, to: emulator, outbox: outbox)
        let hash = try McuBootImage(image).hash
        try await emulator.write(
            Self.write(Self.request(group: 1, command: 0, sequence: 100, .map(["hash": .bytes(hash)])), from: Self.alice))
        _ = try await emulator.addFault(try Self.fault(#"{"on": "reset", "losePending": true}"#))
        try await emulator.write(Self.write(Self.request(group: 0, command: 5, sequence: 101, .map([:])), from: Self.alice))
        for await event in log.subscribe(since: 0) where event.detail?.hasPrefix("firmware: booted") == true {
            #expect(event.detail == "firmware: booted 1.0.0 (nothing pending)")
            break
        }
        #expect(await Self.target(emulator)?.secondary == nil)
        let lost = log.events.compactMap(\.detail)
        #expect(lost.contains("firmware: the image pending in slot 1 is lost (a fault)"))
    }

    /// Firmware faults need a firmware section: a profile without one refuses them with a reason.
    @Test func firmwareFaultsNeedAFirmwareProfile() throws {
        let profile = try ProfileLoader.load(
            json:
                #"{"format": 1, "services": [{"id": "s", "uuid": "180f", "characteristics": [{"id": "c", "uuid": "2a19", "flags": ["read"]}]}]}"#,
            file: "plain.json")
        let problem = profile.problem(with: try Self.fault(#"{"on": "reset", "losePending": true}"#))
        #expect(problem?.message.contains("no \"firmware\" section") == true, "\(String(describing: problem))")
        #expect(throws: FaultSpecError.self) { try Self.fault(#"{"on": "confirm", "percent": 5, "smpError": 4}"#) }
        #expect(throws: FaultSpecError.self) { try Self.fault(#"{"on": "upload", "percent": 101, "drop": true}"#) }
        #expect(throws: FaultSpecError.self) { try Self.fault(#"{"on": "write", "smpError": 4}"#) }
    }

    /// What loading `json` says is wrong with it (empty when it loads).
    static func problems(_ json: String) -> String {
        do {
            _ = try ProfileLoader.load(json: json, file: "smp.json")
            return ""
        } catch {
            return "\(error)"
        }
    }

    @Test func theProfileSaysWhatTheFirmwareSectionNeeds() {
        let flags = Self.profile.replacingOccurrences(of: #"["write-without-response", "notify"]"#, with: #"["write"]"#)
            .replacingOccurrences(of: #""revision": "fw""#, with: #""revision": "nope""#)
        // A version that is none stops the section before its references are looked at.
        let version = Self.problems(flags.replacingOccurrences(of: #""version": "1.0.0""#, with: #""version": "1.0""#))
        #expect(version.contains("firmware.version: \"1.0\" is not an image version"), "\(version)")
        let references = Self.problems(flags)
        #expect(
            references.contains("firmware.characteristic: the SMP characteristic \"smp\" lacks \"write-without-response\" and \"notify\""),
            "\(references)")
        #expect(references.contains("firmware.revision: unknown characteristic \"nope\""), "\(references)")
        let rule = Self.profile.replacingOccurrences(
            of: #""bufferSize": 512 } }"#,
            with: #""bufferSize": 512 }, "rules": [ { "id": "r", "on": { "write": "smp" }, "do": { "succeed": true } } ] }"#)
        #expect(Self.problems(rule).contains("rule \"r\" answers writes to the SMP characteristic"), "\(Self.problems(rule))")
        #expect(Self.problems(Self.profile).isEmpty)
    }
}
