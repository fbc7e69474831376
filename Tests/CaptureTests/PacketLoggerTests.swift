import Bluetooth
import CaptureTestSupport
import Testing

@testable import Capture

/// Apple PacketLogger files: both byte orders, the non-HCI records skipped, told apart from other bytes with no
/// magic, and damage located as in the other formats.
@Suite struct PacketLoggerTests {
    /// `samplePackets()` without the ISO packet (PacketLogger has no type for ISO).
    let packets = samplePackets().filter { $0.kind != .iso }

    func note(_ text: String, at timestamp: Int64 = 1_700_000_000_000_000) -> CapturePacket {
        CapturePacket(kind: .packetLogger(type: 0xFC), timestamp: timestamp, bytes: Array(text.utf8))
    }

    @Test(arguments: [false, true])
    func eitherByteOrderGivesEveryHCIRecordWithDirectionAndTime(bigEndian: Bool) throws {
        let bytes = CaptureWriter.packetLogger(packets, bigEndian: bigEndian)
        let (records, reader) = try readAll(bytes)
        #expect(reader.format == .packetLogger(bigEndian: bigEndian))
        #expect(reader.format.description == "PacketLogger (\(bigEndian ? "big" : "little")-endian)")
        #expect(reader.linktypes.isEmpty && reader.problems.isEmpty)
        #expect(records.map(\.kind) == [.command, .event, .acl, .acl, .sco])
        #expect(records.map(\.direction) == packets.map(\.direction))
        #expect(records.map { Array($0.payload) } == packets.map(\.bytes))
        #expect(records.map(\.timestamp) == packets.map(\.timestamp))
        #expect(records.allSatisfy { $0.controller == nil && !$0.isTruncated })
        #expect(records.map(\.frame) == Array(1...packets.count))
        // Each record: 4-byte length, 8 bytes of time, the type byte, the packet.
        #expect(records.map(\.fileOffset) == packets.indices.map { index in packets.prefix(index).reduce(0) { $0 + 13 + $1.bytes.count } })
        let first = Array(bytes.prefix(4))
        #expect(first == (bigEndian ? [0, 0, 0, UInt8(9 + packets[0].bytes.count)] : [UInt8(9 + packets[0].bytes.count), 0, 0, 0]))
    }

    @Test func notesLogsAndLMPAreSkippedButCountAsFrames() throws {
        var file = [note("Product: iPhone17,2", at: 1_699_000_000_000_000)]  // days before the traffic, as iPhones write
        file.append(packets[0])
        for type: UInt8 in [0xFB, 0xFD, 0x0A, 0x0B, 0xF7, 0xF8, 0xF9, 0xFA, 0xFE] {
            file.append(CapturePacket(kind: .packetLogger(type: type), bytes: [1, 2, 3]))
        }
        file += packets.dropFirst()
        file.append(note(""))
        let (records, reader) = try readAll(CaptureWriter.packetLogger(file))
        #expect(reader.problems.isEmpty)
        #expect(records.map { Array($0.payload) } == packets.map(\.bytes))
        #expect(records.map(\.frame) == [2] + Array(12..<(12 + packets.count - 1)))
        #expect(reader.frames == file.count)
    }

    /// Apple adds record types (a 2024 iPhone log has 0x21): records of unknown types are skipped and noted, not
    /// taken for damage.
    @Test func unknownRecordTypesAreSkippedAndNotedNotDamage() throws {
        var file = packets
        file.append(CapturePacket(kind: .packetLogger(type: 0x42), bytes: [9]))
        file.append(packets[0])
        file.append(CapturePacket(kind: .packetLogger(type: 0x21), bytes: [9, 9]))
        file.append(CapturePacket(kind: .packetLogger(type: 0x42), bytes: [9]))
        let bytes = CaptureWriter.packetLogger(file)
        let (records, reader) = try readAll(bytes)
        #expect(records.count == packets.count + 1)
        #expect(reader.problems.isEmpty)
        #expect(reader.notes == [.unknownRecordTypes(types: [0x42, 0x21], count: 3, firstFrame: packets.count + 1)])
        let trace = try CaptureTrace.read(bytes: bytes)
        #expect(trace.problemCount == 0)
        #expect(trace.notes.contains(.unknownRecordTypes(types: [0x42, 0x21], count: 3, firstFrame: packets.count + 1)))
        #expect(
            CaptureNote.unknownRecordTypes(types: [0x42, 0x21], count: 3, firstFrame: 9).description
                == "3 PacketLogger records of types 0x42, 0x21 (first in frame 9): not HCI, skipped")
    }

    @Test func anEmptyRecordIsAProblemAndReadingGoesOn() throws {
        var bytes = CaptureWriter.packetLogger(packets)
        CaptureWriter.appendPacketLoggerRecord(type: 0, bytes: [], timestamp: 0, bigEndian: false, length: 8, to: &bytes)
        bytes.removeLast()  // length 8: the timestamp only, no type byte
        bytes += CaptureWriter.packetLogger([packets[0]])
        let (records, reader) = try readAll(bytes)
        #expect(records.count == packets.count + 1)
        #expect(reader.problems.map(\.reason) == [.emptyRecord])
    }

    @Test func bytesThatDoNotLookLikePacketLoggerAreRefused() {
        let good = CaptureWriter.packetLogger(packets)
        var badMicroseconds = good
        let second = 13 + packets[0].bytes.count
        badMicroseconds[second + 8..<second + 12] = [0x40, 0x42, 0x0F, 0]  // 1,000,000 µs
        var badType = good
        badType[second + 12] = 0x42
        var hugeLength = good
        hugeLength[2] = 1  // 65,536 + …: longer than a record may be when telling the format
        for bytes in [Array("GIF89a\0\0 and more".utf8), Array(good.prefix(11)), badMicroseconds, badType, hugeLength] {
            #expect {
                _ = try CaptureReader(bytes: bytes)
            } throws: { error in
                guard let problem = error as? CaptureProblem, case .unknownFormat = problem.reason else { return false }
                return problem.description.contains("PacketLogger")
            }
        }
        // One whole record is enough, and so is a file cut inside its second record (read up to the cut).
        #expect((try? CaptureReader(bytes: Array(good.prefix(second))))?.format == .packetLogger(bigEndian: false))
        #expect((try? CaptureReader(bytes: Array(good.prefix(second + 5))))?.format == .packetLogger(bigEndian: false))
    }

    @Test func damageStopsReadingAfterEveryCompleteRecord() throws {
        // Damage past the first records (those tell the format; damage there makes the bytes no PacketLogger file).
        let file = packets + packets
        let good = CaptureWriter.packetLogger(file, bigEndian: true)
        let offsets = file.indices.map { index in file.prefix(index).reduce(0) { $0 + 13 + $1.bytes.count } }

        var (records, reader) = try readAll(Array(good.prefix(offsets[7] + 7)))
        #expect(records.count == 7)
        #expect(
            reader.problems == [
                CaptureProblem(.truncatedHeader(what: "record header", needed: 12, available: 7), frame: 8, offset: offsets[7])
            ])

        (records, reader) = try readAll(Array(good.prefix(offsets[7] + 14)))
        #expect(records.count == 7)
        #expect(
            reader.problems == [
                CaptureProblem(.truncatedRecord(needed: 1 + file[7].bytes.count, available: 2), frame: 8, offset: offsets[7])
            ])

        var short = good
        short[offsets[6]..<offsets[6] + 4] = [0, 0, 0, 3]
        (records, reader) = try readAll(short)
        #expect(records.count == 6)
        #expect(reader.problems == [CaptureProblem(.recordTooShort(length: 3, minimum: 8), frame: 7, offset: offsets[6])])
        #expect(reader.problems.first?.reason.endsReading == true)

        var huge = good
        huge[offsets[6]..<offsets[6] + 4] = [0xFF, 0xFF, 0xFF, 0xFF]  // claims 4 GB: nothing is allocated for it
        (records, reader) = try readAll(huge)
        #expect(records.count == 6)
        #expect(
            reader.problems == [
                CaptureProblem(.absurdLength(what: "record", length: 0xFFFF_FFF7, limit: 262_144), frame: 7, offset: offsets[6])
            ])
    }

    @Test func aSessionDecodesAsFromBTSnoop() throws {
        var script = CaptureScript()
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x40, peer: peerA))
        script.att(handle: 0x40, .readByGroupTypeRequest, [1, 0, 0xFF, 0xFF, 0x00, 0x28], from: .hostToController)
        script.att(handle: 0x40, .readByGroupTypeResponse, [6, 1, 0, 5, 0, 0x0F, 0x18], from: .controllerToHost)
        script.att(handle: 0x40, .handleValueNotification, [3, 0] + Array(0..<60), from: .controllerToHost, fragment: 27)
        script.event(SyntheticHCI.disconnectionComplete(handle: 0x40))
        let reference = try CaptureTrace.read(bytes: script.btsnoop())
        for bigEndian in [false, true] {
            let trace = try CaptureTrace.read(bytes: script.packetLogger(bigEndian: bigEndian))
            #expect(trace.format == .packetLogger(bigEndian: bigEndian))
            #expect(trace.problems.isEmpty)
            #expect(trace.opcodes == [.readByGroupTypeRequest, .readByGroupTypeResponse, .handleValueNotification])
            #expect(trace.attPDUs.map(\.parameters) == reference.attPDUs.map(\.parameters))
            #expect(trace.attPDUs.map(\.timestamp) == reference.attPDUs.map(\.timestamp))
            #expect(trace.attPDUs.map(\.frame) == reference.attPDUs.map(\.frame))
            #expect(trace.connections.map(\.peer) == reference.connections.map(\.peer))
        }
    }
}
