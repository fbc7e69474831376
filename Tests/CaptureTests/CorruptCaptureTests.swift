import Bluetooth
import Capture
import CaptureTestSupport
import Testing

/// Damaged files: everything complete before the damage is read, and the damage is located.
@Suite struct CorruptCaptureTests {
    let packets = samplePackets()
    var btsnoop: [UInt8] { CaptureWriter.btsnoop(packets) }
    /// Offset of record `index` (0-based) in the btsnoop file.
    func btsnoopOffset(_ index: Int) -> Int { 16 + packets.prefix(index).reduce(0) { $0 + 24 + 1 + $1.bytes.count } }

    @Test func truncatedFileHeaders() {
        #expect(throws: CaptureProblem(.truncatedHeader(what: "btsnoop header", needed: 16, available: 10), offset: 0)) {
            _ = try CaptureReader(bytes: Array(btsnoop.prefix(10)))
        }
        #expect(throws: CaptureProblem(.truncatedHeader(what: "pcap header", needed: 24, available: 20), offset: 0)) {
            _ = try CaptureReader(bytes: Array(CaptureWriter.pcap(packets).prefix(20)))
        }
        #expect(throws: CaptureProblem.self) { _ = try CaptureReader(bytes: Array(CaptureWriter.pcapng(packets).prefix(10))) }
    }

    @Test func truncatedRecordHeaderKeepsEveryCompleteRecord() throws {
        let cut = btsnoopOffset(3) + 10
        let (records, reader) = try readAll(Array(btsnoop.prefix(cut)))
        #expect(records.count == 3)
        #expect(
            reader.problems == [
                CaptureProblem(.truncatedHeader(what: "record header", needed: 24, available: 10), frame: 4, offset: btsnoopOffset(3))
            ])
        #expect(
            reader.problems[0].description == "frame 4 (byte \(btsnoopOffset(3))): record header cut short: 24 bytes needed, 10 in the file"
        )
    }

    @Test func truncatedRecordData() throws {
        let cut = btsnoopOffset(2) + 24 + 3
        let (records, reader) = try readAll(Array(btsnoop.prefix(cut)))
        #expect(records.count == 2)
        #expect(
            reader.problems == [
                CaptureProblem(.truncatedRecord(needed: 1 + packets[2].bytes.count, available: 3), frame: 3, offset: btsnoopOffset(2))
            ])
    }

    @Test func absurdLengthsStopReading() throws {
        var bytes = btsnoop
        let offset = btsnoopOffset(1)
        for index in 4..<8 { bytes[offset + index] = 0xFF }  // included length 4 GB
        let (records, reader) = try readAll(bytes)
        #expect(records.count == 1)
        #expect(
            reader.problems == [
                CaptureProblem(.absurdLength(what: "record", length: 0xFFFF_FFFF, limit: 262_144), frame: 2, offset: offset)
            ])
        #expect(reader.problems[0].reason.endsReading)

        var pcap = CaptureWriter.pcap(packets)
        pcap[24 + 8..<24 + 12] = [0, 0, 0, 0x10]  // little-endian 256 MB
        let (pcapRecords, pcapReader) = try readAll(pcap)
        #expect(pcapRecords.isEmpty)
        #expect(pcapReader.problems.first?.reason == .absurdLength(what: "record", length: 0x1000_0000, limit: 262_144))
    }

    @Test func pcapngBlockLengthsAreChecked() throws {
        let good = CaptureWriter.pcapng(packets)
        // The first packet block starts after the section (28 bytes) and interface (20 bytes) blocks.
        let first = 28 + 20
        var badTotal = good
        badTotal[first + 4..<first + 8] = [0x0D, 0, 0, 0]  // 13: not a multiple of 4
        var (records, reader) = try readAll(badTotal)
        #expect(records.isEmpty)
        #expect(reader.problems.first?.frame == 1 && reader.problems.first?.offset == first)

        var mismatch = good
        let length = Int(good[first + 4]) | Int(good[first + 5]) << 8
        mismatch[first + length - 4] ^= 0x04
        (records, reader) = try readAll(mismatch)
        #expect(records.isEmpty)
        #expect(reader.problems.first?.reason == .badBlock("trailing total length \(length ^ 4) differs from the leading \(length)"))

        var huge = good
        huge[first + 4..<first + 8] = [0, 0, 0, 0x40]  // 1 GB
        (records, reader) = try readAll(huge)
        #expect(records.isEmpty && reader.problems.first?.reason.endsReading == true)

        var capturedTooLong = good
        capturedTooLong[first + 20] = 0xFF  // captured length beyond the block: that packet is skipped, reading goes on
        (records, reader) = try readAll(capturedTooLong)
        #expect(records.count == packets.count - 1)
        #expect(reader.problems.first?.frame == 1 && reader.problems.first?.reason.endsReading == false)

        (records, reader) = try readAll(Array(good.dropLast(6)))
        #expect(records.count == packets.count - 1)
        #expect(reader.problems.first?.frame == packets.count)
    }

    @Test func wrongLengthsInsideRecordsAreLocatedProblemsNotCrashes() throws {
        var script = CaptureScript()
        script.event([0x3E, 0x20, 0x02])  // LE Meta claiming 32 parameter bytes, 1 present
        script.add(.acl, [0x40, 0x20, 0x10, 0x00, 0x01], direction: .controllerToHost)  // ACL claiming 16 bytes, 1 present
        script.command([0x09, 0x10])  // command header cut short
        script.add(.acl, SyntheticHCI.acl(handle: 0x40, SyntheticHCI.l2cap(channel: 4, [0x52, 3, 0, 1]))[0], direction: .hostToController)
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.problems.map(\.frame) == [1, 2, 3])
        #expect(trace.problems[0].reason == .lengthMismatch(what: "HCI event 0x3e", declared: 32, actual: 1))
        #expect(trace.problems[1].reason == .lengthMismatch(what: "ACL data", declared: 16, actual: 1))
        #expect(trace.attPDUs.count == 1)  // the record after the damage is still decoded
    }

    @Test func badFragmentsAreProblemsAndLaterPDUsStillDecode() throws {
        var script = CaptureScript()
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x40, peer: peerA))
        // A continuation with no start.
        script.add(.acl, [0x40, 0x10, 0x02, 0x00, 0xAA, 0xBB], direction: .controllerToHost)
        // A start claiming 4 bytes of L2CAP data, followed by a continuation carrying 6.
        script.add(.acl, [0x40, 0x20, 0x06, 0x00, 0x04, 0x00, 0x04, 0x00, 0x0B, 0x01], direction: .controllerToHost)
        script.add(.acl, [0x40, 0x10, 0x06, 0x00, 1, 2, 3, 4, 5, 6], direction: .controllerToHost)
        // A first fragment bigger than its L2CAP PDU.
        script.add(.acl, [0x40, 0x20, 0x08, 0x00, 0x01, 0x00, 0x04, 0x00, 0x0B, 0x01, 0x02, 0x03], direction: .controllerToHost)
        script.att(handle: 0x40, .readResponse, [9], from: .controllerToHost)
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(
            trace.problems.map(\.reason) == [
                .continuationWithoutStart(handle: 0x40),
                .oversizeFragment(handle: 0x40, expected: 8, received: 12),
                .oversizeFragment(handle: 0x40, expected: 5, received: 8),
                .unmatchedResponse(opcode: 0x0B, "answers no outstanding request"),
            ])
        #expect(trace.problems.map(\.frame) == [2, 4, 5, 6])
        #expect(trace.attPDUs.count == 1)
    }

    @Test func everyPrefixOfAGoodFileReadsWithoutTrapping() throws {
        for bytes in [
            btsnoop, CaptureWriter.pcap(packets, bigEndian: true),
            CaptureWriter.pcapng(packets, interfaces: [.init(linktype: 201, resolution: 9)]),
            CaptureWriter.packetLogger(packets, bigEndian: true), CaptureWriter.packetLogger(packets),
        ] {
            for length in 0...bytes.count {
                guard let reader = try? CaptureReader(bytes: Array(bytes.prefix(length))) else { continue }
                let records = Array(reader)
                #expect(records.count <= packets.count)
                // Cut inside a record: the problem points into the file, at or before the cut.
                for problem in reader.problems where problem.reason.endsReading { #expect((problem.offset ?? 0) <= length) }
                _ = CaptureTrace(reader: try CaptureReader(bytes: Array(bytes.prefix(length))))
            }
        }
    }
}
