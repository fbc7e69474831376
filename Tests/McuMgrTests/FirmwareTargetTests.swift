import Digest
import McuMgr
import Testing

/// The firmware-update target's answers, request by request, as Zephyr's mcumgr gives them (shapes and error codes
/// from Zephyr's img_mgmt/os_mgmt and the `smp` package's models; tests/McuMgrTests/Fixtures holds imgtool's images).
@Suite struct FirmwareTargetTests {
    static let running: FirmwareTarget.Image = FirmwareTarget.Image(
        version: McuBootImage.Version(major: 1, minor: 0, revision: 0), hash: [UInt8](repeating: 0xAA, count: 32))
    var sequence: UInt8 = 0

    mutating func ask(
        _ target: inout FirmwareTarget, group: UInt16, command: UInt8, read: Bool = false, version: UInt8 = 1, _ body: CBOR = .map([:])
    ) throws -> CBOR {
        sequence &+= 1
        let outcome = target.handle(
            SMPPacket(
                request: read ? .read : .write, group: group, command: command, sequence: sequence, version: version, body: body))
        let answer = try #require(outcome.answer)
        #expect(answer.header.sequence == sequence && answer.header.group == group && answer.header.command == command)
        #expect(answer.header.operation == (read ? .readResponse : .writeResponse))
        #expect(Int(answer.header.length) == answer.body.count)
        return try CBOR(decoding: answer.body)
    }

    static func image() throws -> [UInt8] { try McuBootImageTests.fixture("app-1.2.3+4.bin") }

    /// Uploads `bytes` in chunks of `size`, as smpclient does: the first with len and sha, then at the offset answered.
    mutating func upload(_ target: inout FirmwareTarget, _ bytes: [UInt8], chunk size: Int = 200) throws -> CBOR {
        var offset = 0
        var answer = CBOR.null
        while offset < bytes.count {
            let data = Array(bytes[offset..<min(offset + size, bytes.count)])
            let body: CBOR =
                offset == 0
                ? .map([
                    "image": .int(0), "len": .int(bytes.count), "off": .int(0), "sha": .bytes(SHA256.hash(bytes)), "data": .bytes(data),
                ])
                : .map(["off": .int(offset), "data": .bytes(data)])
            answer = try ask(&target, group: 1, command: 1, body)
            offset = try #require(answer["off"]?.int)
        }
        return answer
    }

    @Test mutating func theOSGroupAnswers() throws {
        var target = FirmwareTarget(running: Self.running)
        #expect(try ask(&target, group: 0, command: 0, .map(["d": .text("hello")])) == .map(["r": .text("hello")]))
        #expect(try ask(&target, group: 0, command: 6, read: true) == .map(["buf_size": .int(2475), "buf_count": .int(4)]))
        #expect(try ask(&target, group: 0, command: 7, read: true)["output"] == .text("Zephyr"))
        #expect(try ask(&target, group: 0, command: 7, read: true, .map(["format": .text("sv")]))["output"] == .text("Zephyr v3.7.0"))
        #expect(
            try ask(&target, group: 0, command: 7, read: true, .map(["format": .text("q")]))
                == .map(["err": .map(["group": .int(0), "rc": .int(2)])]))
        #expect(try ask(&target, group: 0, command: 8, read: true) == .map(["bootloader": .text("MCUboot")]))
        #expect(try ask(&target, group: 0, command: 8, read: true, .map(["query": .text("mode")])) == .map(["mode": .int(3)]))
        #expect(try ask(&target, group: 0, command: 0, .map([:])) == .map(["rc": .int(3)]), "echo without d")
    }

    @Test mutating func anUploadTestResetAndConfirm() throws {
        var target = FirmwareTarget(running: Self.running)
        let bytes = try Self.image()
        let state = try ask(&target, group: 1, command: 0, read: true)
        #expect(state["images"]?.array?.count == 1)
        #expect(state["images"]?.array?.first?["confirmed"] == .bool(true))
        let last = try upload(&target, bytes)
        #expect(last == .map(["off": .int(bytes.count), "match": .bool(true)]))
        let uploaded = try #require(target.secondary)
        #expect(uploaded.version.description == "1.2.3.4")
        #expect(uploaded.hash == (try McuBootImage(bytes)).hash)
        // Test it: slot 1 pending; a reset swaps it in, unconfirmed.
        let marked = try ask(&target, group: 1, command: 0, .map(["hash": .bytes(uploaded.hash), "confirm": .bool(false)]))
        #expect(marked["images"]?.array?[1]["pending"] == .bool(true))
        #expect(try ask(&target, group: 0, command: 5) == .map([:]))
        #expect(target.boot() == .swapped(to: uploaded, permanent: false))
        let swapped = try #require(try ask(&target, group: 1, command: 0, read: true)["images"]?.array)
        #expect(swapped[0]["version"] == .text("1.2.3.4") && swapped[0]["active"] == .bool(true) && swapped[0]["confirmed"] == .bool(false))
        #expect(swapped[1]["version"] == .text("1.0.0") && swapped[1]["confirmed"] == .bool(true))
        // Not confirmed: the next reset reverts.
        #expect(target.boot() == .reverted(to: Self.running))
        #expect(target.primary == Self.running && target.confirmed)
        // Test again, reset, confirm: the next reset keeps it.
        _ = try ask(&target, group: 1, command: 0, .map(["hash": .bytes(uploaded.hash)]))
        _ = target.boot()
        let confirmed = try ask(&target, group: 1, command: 0, .map(["confirm": .bool(true)]))
        #expect(confirmed["images"]?.array?[0]["confirmed"] == .bool(true))
        #expect(target.boot() == .same(uploaded))
    }

    @Test mutating func aChunkAtAnotherOffsetIsDroppedAndAnUploadResumes() throws {
        var target = FirmwareTarget(running: Self.running)
        let bytes = try Self.image()
        let sha = SHA256.hash(bytes)
        let first = CBOR.map(["len": .int(bytes.count), "off": .int(0), "sha": .bytes(sha), "data": .bytes(Array(bytes.prefix(500)))])
        #expect(try ask(&target, group: 1, command: 1, first) == .map(["off": .int(500)]))
        #expect(try ask(&target, group: 1, command: 1, .map(["off": .int(900), "data": .bytes([1, 2, 3])])) == .map(["off": .int(500)]))
        // The client starts over with the same sha: told where the upload stands.
        #expect(try ask(&target, group: 1, command: 1, first) == .map(["off": .int(500)]))
        #expect(target.uploadProgress?.offset == 500)
        let rest = CBOR.map(["off": .int(500), "data": .bytes(Array(bytes.dropFirst(500)))])
        #expect(try ask(&target, group: 1, command: 1, rest) == .map(["off": .int(bytes.count), "match": .bool(true)]))
    }

    @Test mutating func refusalsAreZephyrsCodesInBothForms() throws {
        var target = FirmwareTarget(running: Self.running)
        let bytes = try Self.image()
        func err(_ rc: Int) -> CBOR { .map(["err": .map(["group": .int(1), "rc": .int(rc)])]) }
        let head = Array(bytes.prefix(64))
        #expect(try ask(&target, group: 1, command: 1, .map(["data": .bytes(head)])) == err(20))
        #expect(try ask(&target, group: 1, command: 1, .map(["off": .int(0), "data": .bytes([1, 2])])) == err(22))
        #expect(try ask(&target, group: 1, command: 1, .map(["off": .int(0), "data": .bytes(head)])) == err(21))
        #expect(
            try ask(&target, group: 1, command: 1, .map(["off": .int(0), "len": .int(64), "data": .bytes([0] + head.dropFirst())]))
                == err(23))
        #expect(try ask(&target, group: 1, command: 1, .map(["off": .int(0), "len": .int(1 << 30), "data": .bytes(head)])) == err(30))
        #expect(
            try ask(
                &target, group: 1, command: 1,
                .map(["off": .int(0), "len": .int(64), "data": .bytes(head), "sha": .bytes([UInt8](repeating: 1, count: 33))]))
                == err(24))
        let older = FirmwareTarget.Image(version: McuBootImage.Version(major: 9, minor: 0, revision: 0), hash: Self.running.hash)
        var newer = FirmwareTarget(running: older)
        #expect(
            try ask(
                &newer, group: 1, command: 1,
                .map(["off": .int(0), "len": .int(bytes.count), "data": .bytes(head), "upgrade": .bool(true)])) == err(27))
        #expect(
            try ask(&target, group: 1, command: 1, .map(["off": .int(0), "len": .int(40), "data": .bytes(head)])) == err(31), "overrun")
        // State writes.
        #expect(try ask(&target, group: 1, command: 0, .map([:])) == err(24))
        #expect(try ask(&target, group: 1, command: 0, .map(["hash": .bytes([1, 2, 3])])) == err(24))
        #expect(try ask(&target, group: 1, command: 0, .map(["hash": .bytes([UInt8](repeating: 7, count: 32))])) == err(8))
        #expect(try ask(&target, group: 1, command: 0, .map(["hash": .bytes(Self.running.hash)])) == err(33))
        // SMP v1 gets the translated management code.
        #expect(try ask(&target, group: 1, command: 0, version: 0, .map(["hash": .bytes([1, 2, 3])])) == .map(["rc": .int(3)]))
        #expect(
            try ask(&target, group: 1, command: 0, version: 0, .map(["hash": .bytes([UInt8](repeating: 7, count: 32))]))
                == .map(["rc": .int(1)]))
        // Slot 1 in use: no upload, no erase, no second test.
        _ = try upload(&target, bytes)
        _ = try ask(&target, group: 1, command: 0, .map(["hash": .bytes(try #require(target.secondary).hash)]))
        #expect(try ask(&target, group: 1, command: 1, .map(["off": .int(0), "len": .int(bytes.count), "data": .bytes(head)])) == err(9))
        #expect(try ask(&target, group: 1, command: 5) == err(9))
        #expect(try ask(&target, group: 1, command: 0, .map(["hash": .bytes(try #require(target.secondary).hash)])) == err(28))
    }

    @Test mutating func whatIsNotAnSMPRequestGetsTheManagementCode() throws {
        var target = FirmwareTarget(running: Self.running)
        #expect(try ask(&target, group: 9, command: 0, .map([:])) == .map(["rc": .int(8)]), "the shell group is not there")
        #expect(try ask(&target, group: 1, command: 1, read: true) == .map(["rc": .int(8)]), "upload is a write")
        #expect(try ask(&target, group: 0, command: 0, version: 2, .map(["d": .text("x")])) == .map(["rc": .int(13)]))
        let header = SMPHeader(operation: .write, length: 2, group: 0, sequence: 1, command: 0)
        let outcome = target.handle(SMPPacket(header: header, body: [0xA1, 0x61]))
        #expect(try CBOR(decoding: try #require(outcome.answer).body) == .map(["rc": .int(3)]))
        #expect(target.handle(SMPPacket(header: header.answer(length: 0), body: [])).answer == nil, "a response is not answered")
    }

    /// An image imgtool padded to the slot (`--pad`) ends in MCUboot's trailer: once uploaded it is pending without a
    /// state write, and the next reset swaps it in for test; with `--confirm` for good. The same image in a larger slot
    /// has its trailer mid-slot, where MCUboot does not look: nothing pending.
    @Test mutating func aPaddedImagesTrailerMarksItPending() throws {
        var configuration = FirmwareTarget.Configuration()
        configuration.slotSize = 0x2000
        for (name, permanent) in [("app-1.3.0-padded.bin", false), ("app-1.3.1-confirmed.bin", true)] {
            var target = FirmwareTarget(running: Self.running, configuration: configuration)
            let bytes = try McuBootImageTests.fixture(name)
            #expect(try upload(&target, bytes, chunk: 1000)["match"] == .bool(true))
            let slots = try #require(try ask(&target, group: 1, command: 0, read: true)["images"]?.array)
            #expect(slots.count == 2 && slots[1]["pending"] == .bool(true) && slots[1]["permanent"] == .bool(permanent), "\(name)")
            let image = try #require(target.secondary)
            #expect(target.boot() == .swapped(to: image, permanent: permanent), "\(name)")
            #expect(target.confirmed == permanent)
            var larger = FirmwareTarget(running: Self.running)
            _ = try upload(&larger, bytes, chunk: 1000)
            #expect(larger.secondary != nil && !larger.pending, "\(name) in a 384 KiB slot")
        }
    }

    /// An encrypted image's SHA-256 TLV is of the plain image: the device (which would hold the key) keeps it and
    /// reports that hash, and marking it for test by that hash works. A signed image is read like any other.
    @Test mutating func encryptedAndSignedImagesAreKept() throws {
        for (name, version) in [("app-1.4.0-encrypted.bin", "1.4.0"), ("app-1.5.0-ecdsa.bin", "1.5.0")] {
            var target = FirmwareTarget(running: Self.running)
            let bytes = try McuBootImageTests.fixture(name)
            let parsed = try McuBootImage(bytes)
            #expect(parsed.isEncrypted == name.contains("encrypted") && parsed.hashMatches != parsed.isEncrypted, "\(name)")
            _ = try upload(&target, bytes, chunk: 1000)
            let image = try #require(target.secondary, "\(name)")
            #expect(image.version.description == version && image.hash == parsed.hash)
            let marked = try ask(&target, group: 1, command: 0, .map(["hash": .bytes(parsed.hash)]))
            #expect(marked["images"]?.array?[1]["pending"] == .bool(true), "\(name)")
        }
    }

    @Test mutating func anImageWhoseHashIsWrongLeavesSlotOneEmpty() throws {
        var target = FirmwareTarget(running: Self.running)
        var bytes = try Self.image()
        bytes[0x300] ^= 1
        let last = try upload(&target, bytes)
        #expect(last["match"] == .bool(true), "the client's sha is of the bytes it sent")
        #expect(target.secondary == nil)
        #expect(try ask(&target, group: 1, command: 0, read: true)["images"]?.array?.count == 1)
    }
}
