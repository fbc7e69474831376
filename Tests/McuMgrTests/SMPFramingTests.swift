import McuMgr
import Testing

/// SMP packets: the header both ways, and packets put back together from writes of any size, bounded by the
/// buffer the device reports.
@Suite struct SMPFramingTests {
    @Test func theHeaderBothWays() throws {
        // An image upload request, SMP v2, sequence 7: op 2 (write) with version 1 in bits 3-4.
        let bytes: [UInt8] = [0x0A, 0x00, 0x01, 0x2C, 0x00, 0x01, 0x07, 0x01]
        let header = try #require(SMPHeader(bytes))
        #expect(header == SMPHeader(operation: .write, version: 1, length: 300, group: 1, sequence: 7, command: 1))
        #expect(header.bytes == bytes)
        let answer = header.answer(length: 9)
        #expect(answer.bytes == [0x0B, 0x00, 0x00, 0x09, 0x00, 0x01, 0x07, 0x01])
        #expect(SMPHeader(bytes.prefix(7)) == nil)
        #expect(SMPHeader([0x04] + bytes.dropFirst()) == nil, "operation 4 is none of the four")
    }

    static func packet(_ length: Int, sequence: UInt8) -> SMPPacket {
        SMPPacket(
            header: SMPHeader(operation: .write, length: UInt16(length), group: 0, sequence: sequence, command: 0),
            body: (0..<length).map { UInt8(truncatingIfNeeded: $0) })
    }

    @Test func packetsComeBackFromWritesOfEverySize() {
        let packets = [Self.packet(0, sequence: 1), Self.packet(300, sequence: 2), Self.packet(17, sequence: 3)]
        let stream = packets.flatMap(\.bytes)
        for size in [1, 2, 7, 8, 9, 20, 244, 500, stream.count] {
            var reassembler = SMPReassembler(capacity: 2048)
            var out: [SMPReassembler.Piece] = []
            for start in stride(from: 0, to: stream.count, by: size) {
                out += reassembler.take(Array(stream[start..<min(start + size, stream.count)]))
            }
            #expect(out == packets.map { .packet($0) }, "writes of \(size)")
            #expect(reassembler.pending == 0)
        }
    }

    @Test func aPacketLongerThanTheBufferIsReportedAndSkipped() {
        var reassembler = SMPReassembler(capacity: 64)
        let long = Self.packet(100, sequence: 9)
        let next = Self.packet(10, sequence: 10)
        var out = reassembler.take(Array(long.bytes.prefix(30)))
        #expect(out == [.tooLong(long.header)])
        out = reassembler.take(Array(long.bytes.dropFirst(30)) + next.bytes)
        #expect(out == [.packet(next)], "the rest of the long one is skipped; the next is read")
        #expect(reassembler.take([0x07, 1, 2, 3, 4, 5, 6, 7, 8]) == [.garbage(9)])
        #expect(reassembler.take(next.bytes) == [.packet(next)], "garbage ends with its write")
        #expect(reassembler.isIdle)
        _ = reassembler.take(Array(next.bytes.prefix(5)))
        #expect(!reassembler.isIdle && reassembler.pending == 5)
    }
}
