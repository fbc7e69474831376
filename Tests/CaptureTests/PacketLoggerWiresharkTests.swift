import Bluetooth
import CaptureTestSupport
import Foundation
import Testing

@testable import Capture

/// Wireshark as the oracle for PacketLogger: tshark reads the synthetic files our writer makes, and must see
/// the frames, times, bytes and ATT PDUs our reader and decoder see. tshark is part of the machine's set-up
/// (scripts/bootstrap); without it this test fails rather than pass unchecked.
@Suite struct PacketLoggerWiresharkTests {
    /// One frame as tshark dissected it.
    struct Frame {
        var number: Int
        var microseconds: Int64
        /// The frame's bytes (type byte and packet) in lower-case hex, as tshark gives them.
        var hex: String
        var type: UInt8?
        var attOpcodes: [UInt8]
    }

    /// A session as an iPhone logs it: notes first (days before), advertising, a connection, discovery, a read,
    /// a fragmented notification, SCO, power and configuration records between them.
    static func session() -> [CapturePacket] {
        var script = CaptureScript()
        script.add(.packetLogger(type: 0xFC), Array("Product: iPhone17,2".utf8))
        script.packets[0].timestamp -= 3 * 86_400_000_000
        script.command(SyntheticHCI.command(0x1009))
        script.event(SyntheticHCI.readBDAddrComplete(localAddress))
        script.event(SyntheticHCI.legacyAdvertisingReports([(0x00, 1, peerA, [2, 1, 6, 5, 9] + Array("Lock".utf8), -40)]))
        script.add(.packetLogger(type: 0xFD), [0, 1, 2, 3])
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x40, peer: peerA, peerType: 1, enhanced: true))
        script.att(handle: 0x40, .exchangeMTURequest, [0x05, 0x02], from: .hostToController)
        script.att(handle: 0x40, .exchangeMTUResponse, [0xF7, 0x00], from: .controllerToHost)
        script.att(handle: 0x40, .readByGroupTypeRequest, [1, 0, 0xFF, 0xFF, 0x00, 0x28], from: .hostToController)
        script.att(handle: 0x40, .readByGroupTypeResponse, [6, 1, 0, 5, 0, 0x0F, 0x18], from: .controllerToHost)
        script.add(.packetLogger(type: 0xFB), Array("power on".utf8))
        script.att(handle: 0x40, .readByTypeRequest, [1, 0, 5, 0, 0x03, 0x28], from: .hostToController)
        script.att(handle: 0x40, .readByTypeResponse, [7, 2, 0, 0x12, 3, 0, 0x19, 0x2A], from: .controllerToHost)
        script.att(handle: 0x40, .readRequest, [3, 0], from: .hostToController)
        script.att(handle: 0x40, .readResponse, [87], from: .controllerToHost)
        script.att(handle: 0x40, .handleValueNotification, [3, 0] + Array(0..<60), from: .controllerToHost, fragment: 27)
        script.add(.sco, [0x41, 0x00, 0x02, 0xAA, 0xBB], direction: .controllerToHost)
        script.add(.packetLogger(type: 0xFC), Array("disconnecting".utf8))
        script.event(SyntheticHCI.disconnectionComplete(handle: 0x40))
        return script.packets
    }

    @Test(arguments: [false, true])
    func tsharkSeesWhatWeRead(bigEndian: Bool) throws {
        let packets = Self.session()
        let bytes = CaptureWriter.packetLogger(packets, bigEndian: bigEndian)
        let frames = try Self.tshark(bytes)
        let (records, reader) = try readAll(bytes)
        #expect(reader.problems.isEmpty)
        // Every record is a frame to both, notes included, numbered alike.
        #expect(frames.map(\.number) == Array(1...packets.count))
        #expect(reader.frames == frames.count)
        #expect(frames.map(\.type) == packets.map(\.packetLoggerType))
        #expect(frames.map(\.microseconds) == packets.map(\.timestamp))
        // Our HCI records are tshark's frames of the HCI types, byte for byte after the type byte.
        let hci = frames.filter { ($0.type ?? 0xFF) <= 0x09 }
        #expect(records.map(\.frame) == hci.map(\.number))
        #expect(records.map { Hex.string($0.payload) } == hci.map { String($0.hex.dropFirst(2)) })
        #expect(records.map(\.timestamp) == hci.map(\.microseconds))
        // The ATT PDUs tshark dissects (reassembled) are the decoder's, in order.
        let trace = CaptureTrace(reader: try CaptureReader(bytes: bytes))
        #expect(trace.problems.isEmpty)
        #expect(trace.attPDUs.map(\.opcode.rawValue) == frames.flatMap(\.attOpcodes))
        #expect(trace.attPDUs.count == 9)
        #expect(trace.connections.first?.peer?.address == peerA)
    }

    /// tshark's dissection of `bytes` (written to a temporary `.pklg` file).
    static func tshark(_ bytes: [UInt8]) throws -> [Frame] {
        let path = "/tmp/capture-tests-\(UInt32.random(in: 0...UInt32.max)).pklg"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["tshark", "-r", path, "-T", "json", "-x", "--no-duplicate-keys"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            Issue.record("tshark exited \(process.terminationStatus): it is needed here (scripts/bootstrap installs it)")
            return []
        }
        let packets = try JSONSerialization.jsonObject(with: data) as? [[String: Any]] ?? []
        return packets.compactMap { packet in
            guard let layers = (packet["_source"] as? [String: Any])?["layers"] as? [String: Any],
                let frame = layers["frame"] as? [String: Any], let number = (frame["frame.number"] as? String).flatMap({ Int($0) }),
                let time = frame["frame.time_epoch"] as? String, let raw = (layers["frame_raw"] as? [Any])?.first as? String
            else { return nil }
            let parts = time.split(separator: ".")
            let microseconds = Int64(parts[0])! * 1_000_000 + Int64(parts.count > 1 ? parts[1].prefix(6) : "0")!
            let type = ((layers["packetlogger"] as? [String: Any])?["packetlogger.type"] as? String).flatMap {
                UInt8($0.dropFirst(2), radix: 16)
            }
            let opcodes = (layers["btatt"] as? [String: Any])?["btatt.opcode"]
            let attOpcodes = ((opcodes as? [String]) ?? (opcodes as? String).map { [$0] } ?? []).compactMap {
                UInt8($0.dropFirst(2), radix: 16)
            }
            return Frame(number: number, microseconds: microseconds, hex: raw, type: type, attOpcodes: attOpcodes)
        }
    }
}
