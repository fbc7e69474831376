import Bluetooth
import CaptureTestSupport
import Testing

@testable import Capture

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct FormatTests {
    /// What every HCI format must give back for `samplePackets()`.
    func expectSample(
        _ records: [HCIRecord], directions: Bool = true, controller: UInt16? = nil, timestamps: Bool = true,
        skipsSCOAndISO: Bool = false
    ) {
        let packets = samplePackets()
        #expect(records.count == packets.count)
        for (record, packet) in zip(records, packets) {
            #expect(Array(record.payload) == packet.bytes)
            #expect(record.originalLength == packet.bytes.count && !record.isTruncated)
            #expect(record.controller == controller)
            if timestamps { #expect(record.timestamp == packet.timestamp) }
            if directions || packet.kind == .command || packet.kind == .event { #expect(record.direction == packet.direction) }
        }
        #expect(records.map(\.kind) == [.command, .event, .acl, .acl, .sco, .iso])
        #expect(records.map(\.frame) == Array(1...packets.count))
    }

    @Test func btsnoopH4KeepsDirectionAndConvertsTheYearZeroEpoch() throws {
        let bytes = CaptureWriter.btsnoop(samplePackets(), datalink: 1002)
        let (records, reader) = try readAll(bytes)
        #expect(reader.format == .btsnoop(datalink: 1002))
        #expect(reader.linktypes == [1002])
        expectSample(records)
        // 2023-11-14T22:13:20Z: the raw value counts from year 0.
        let raw = Int64(bitPattern: UInt64(bytes[32...39].reduce(0) { $0 << 8 | UInt64($1) }))
        #expect(raw == 1_700_000_000_000_000 + 0x00DC_DDB3_0F2F_8000)
        #expect(records[0].timestamp == 1_700_000_000_000_000)
        #expect(records[0].fileOffset == 16)
    }

    @Test func btsnoopUnencapsulatedTakesTheKindFromTheFlags() throws {
        let (records, _) = try readAll(CaptureWriter.btsnoop(Array(samplePackets().prefix(4)), datalink: 1001))
        #expect(records.map(\.kind) == [.command, .event, .acl, .acl])
        #expect(records.map(\.direction) == [.hostToController, .controllerToHost, .hostToController, .controllerToHost])
    }

    @Test func btsnoopMonitorCarriesControllerAndOpcodeInTheFlags() throws {
        var packets = samplePackets().map { packet -> CapturePacket in
            var packet = packet
            packet.controller = 1
            return packet
        }
        packets.insert(
            CapturePacket(
                kind: .monitor(opcode: 0), controller: 1,
                bytes: [0, 0] + localAddress.littleEndian + Array("hci1\0\0\0\0".utf8)), at: 0)
        packets.append(CapturePacket(kind: .monitor(opcode: 12), controller: 1, bytes: Array("hello\0".utf8)))
        let (records, _) = try readAll(CaptureWriter.btsnoop(packets, datalink: 2001))
        #expect(records.count == 8)
        #expect(records[0].kind == .monitor(.newIndex(type: 0, bus: 0, address: localAddress, name: "hci1")))
        #expect(records[7].kind == .monitor(.systemNote("hello")))
        expectSample(
            Array(records[1...6]).map { record in
                var record = record
                record.frame -= 1
                return record
            }, controller: 1)
    }

    @Test(arguments: [(false, false), (true, false), (false, true), (true, true)])
    func pcapEitherByteOrderMicroOrNanoseconds(bigEndian: Bool, nanoseconds: Bool) throws {
        let (records, reader) = try readAll(
            CaptureWriter.pcap(samplePackets(), linktype: 201, bigEndian: bigEndian, nanoseconds: nanoseconds))
        #expect(reader.format == .pcap(linktype: 201, nanoseconds: nanoseconds, bigEndian: bigEndian))
        expectSample(records)
    }

    @Test func pcapH4WithoutDirectionKnowsOnlyCommandsAndEvents() throws {
        let (records, _) = try readAll(CaptureWriter.pcap(samplePackets(), linktype: 187))
        expectSample(records, directions: false)
        #expect(records[2].direction == .unknown)
    }

    @Test func pcapLinuxMonitorHeader() throws {
        let packets = samplePackets().map { packet -> CapturePacket in
            var packet = packet
            packet.controller = 3
            return packet
        }
        let (records, _) = try readAll(CaptureWriter.pcap(packets, linktype: 254, bigEndian: true))
        #expect(records.allSatisfy { $0.controller == 3 })
        #expect(records.map(\.direction) == packets.map(\.direction))
    }

    @Test func pcapngTwoInterfacesOfDifferentLinktypesAndResolutions() throws {
        var packets = samplePackets()
        for index in packets.indices where index % 2 == 1 { packets[index].interface = 1 }
        let bytes = CaptureWriter.pcapng(
            packets,
            interfaces: [
                .init(linktype: 201, resolution: 9, name: "android"),
                .init(linktype: 254, resolution: 0x80 | 20, offsetSeconds: 100),
            ])
        let (records, reader) = try readAll(bytes)
        #expect(reader.format == .pcapng)
        #expect(reader.linktypes == [201, 254])
        #expect(records.count == packets.count)
        for (record, packet) in zip(records, packets) {
            #expect(Array(record.payload) == packet.bytes)
            #expect(record.direction == packet.direction)
            #expect(record.controller == (packet.interface == 1 ? 0 : nil))
            // 2^-20 s units are coarser than a microsecond.
            #expect(abs(record.timestamp! - packet.timestamp) <= 1)
        }
    }

    @Test func pcapngBigEndianSkipsUnknownBlocksAndOptionsAndReadsEveryPacketBlockKind() throws {
        let packets = samplePackets()
        var builder = PcapngBuilder(bigEndian: true)
        builder.section(comment: "synthetic")
        builder.block(type: 0x0000_0BAD, body: [1, 2, 3, 4, 5])  // unknown: skipped
        builder.interface(.init(linktype: 201, name: "hci"))
        builder.enhancedPacket(
            interface: 0, timestamp: UInt64(packets[0].timestamp),
            data: CaptureWriter.encapsulate(packets[0], linktype: 201), comment: "first")
        builder.block(type: 4, body: [0, 0, 0, 0])  // name resolution: skipped
        builder.simplePacket(data: CaptureWriter.encapsulate(packets[1], linktype: 201))
        builder.obsoletePacket(
            interface: 0, timestamp: UInt64(packets[2].timestamp), data: CaptureWriter.encapsulate(packets[2], linktype: 201))
        builder.block(type: 5, body: [UInt8](repeating: 0, count: 12))  // interface statistics: skipped
        // A second section, little-endian this time, with its own interfaces.
        var second = PcapngBuilder(bigEndian: false)
        second.section()
        second.interface(.init(linktype: 187))
        second.enhancedPacket(
            interface: 0, timestamp: UInt64(packets[3].timestamp), data: CaptureWriter.encapsulate(packets[3], linktype: 187))
        let (records, reader) = try readAll(builder.bytes + second.bytes)
        #expect(reader.problems.isEmpty)
        #expect(records.map(\.frame) == [1, 2, 3, 4])
        #expect(records.map { Array($0.payload) } == packets.prefix(4).map(\.bytes))
        #expect(records[1].timestamp == nil)  // simple packet blocks have none
        #expect(records[2].timestamp == packets[2].timestamp)
        #expect(records[3].direction == .unknown)
        #expect(reader.linktypes == [201, 187])
    }

    @Test func formatComesFromTheMagicNotTheName() throws {
        let bytes = CaptureWriter.pcapng(samplePackets())
        let path = "/tmp/capture-tests-\(UInt32.random(in: 0...UInt32.max)).btsnoop"
        let file = fopen(path, "wb")!
        _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, bytes.count, file) }
        fclose(file)
        defer { remove(path) }
        let reader = try CaptureReader(path: path)
        #expect(reader.format == .pcapng)
        #expect(Array(reader).count == samplePackets().count)
    }

    @Test func unsupportedLinktypesAndFormatsAreRefusedClearly() {
        for linktype: UInt32 in [251, 256, 272] {
            #expect {
                _ = try CaptureReader(bytes: CaptureWriter.pcap([], linktype: linktype))
            } throws: { error in
                let problem = error as! CaptureProblem
                return problem.reason == .unsupportedLinktype(linktype) && problem.description.contains("over-the-air sniffer")
                    && problem.description.contains("unsupported linktype \(linktype)")
            }
        }
        // pcapng whose only interface is a sniffer's.
        #expect(throws: CaptureProblem(.unsupportedLinktype(272))) {
            _ = try CaptureReader(bytes: CaptureWriter.pcapng([], interfaces: [.init(linktype: 272)]))
        }
        #expect(throws: CaptureProblem(.unsupportedDatalink(1003), offset: 12)) {
            _ = try CaptureReader(bytes: Array(CaptureWriter.btsnoop([], datalink: 1003)))
        }
        #expect(throws: CaptureProblem(.empty)) { _ = try CaptureReader(bytes: []) }
        #expect(throws: CaptureProblem(.unknownFormat(firstBytes: Array("GIF89a\0\0".utf8)), offset: 0)) {
            _ = try CaptureReader(bytes: Array("GIF89a\0\0 and more".utf8))
        }
        #expect(throws: CaptureProblem.self) { _ = try CaptureReader(path: "/nonexistent/capture.log") }
    }

    @Test func aSnifferInterfaceBesideAnHCIOneIsSkippedWithAProblem() throws {
        var packets = samplePackets()
        packets[0].interface = 1
        let (records, reader) = try readAll(CaptureWriter.pcapng(packets, interfaces: [.init(linktype: 201), .init(linktype: 256)]))
        #expect(records.count == packets.count - 1)
        #expect(records.first?.frame == 2)
        #expect(
            reader.problems == [
                CaptureProblem(.interfaceNotHCI(interface: 1, linktype: 256), frame: 1, offset: reader.problems.first?.offset)
            ])
    }

    @Test func filteredRecordsAreMarkedTruncated() throws {
        var packets = samplePackets()
        packets[2].keep = 5
        let (records, _) = try readAll(CaptureWriter.btsnoop(packets))
        #expect(records[2].isTruncated)
        #expect(records[2].payload.count == 4 && records[2].originalLength == packets[2].bytes.count)
        let trace = try CaptureTrace.read(bytes: CaptureWriter.btsnoop(packets))
        #expect(trace.notes.contains(.truncatedRecords(count: 1)))
        #expect(trace.statistics.truncated == 1)
    }

    @Test func pcapngTimestampResolutions() {
        #expect(PcapngReader.microseconds(1_500_000, resolution: 6, offsetSeconds: 0) == 1_500_000)
        #expect(PcapngReader.microseconds(1_500_000_000, resolution: 9, offsetSeconds: 0) == 1_500_000)
        #expect(PcapngReader.microseconds(15, resolution: 1, offsetSeconds: 0) == 1_500_000)
        #expect(PcapngReader.microseconds(1 << 20, resolution: 0x80 | 20, offsetSeconds: 0) == 1_000_000)
        #expect(PcapngReader.microseconds(UInt64.max, resolution: 0, offsetSeconds: 0) == nil)
        #expect(PcapngReader.microseconds(UInt64.max, resolution: 127, offsetSeconds: 0) == 0)
        #expect(PcapngReader.microseconds(UInt64.max, resolution: 0xFF, offsetSeconds: 0) == 0)
    }
}
