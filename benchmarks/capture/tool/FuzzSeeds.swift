import Bluetooth
import Capture
import CaptureTestSupport
import Foundation

/// Small synthetic captures in every format the reader knows, each with advertising, a connection, ATT
/// (fragmented and not), SMP and a disconnection, and a HID keyboard's session (characteristics and services that
/// share a UUID): the `capture` fuzz target's seeds.
enum FuzzSeeds {
    static func session() -> [CapturePacket] {
        var script = CaptureScript()
        let peer = BluetoothAddress("C0:11:22:33:44:55")!
        script.event(SyntheticHCI.readBDAddrComplete(BluetoothAddress("00:AA:01:01:00:01")!))
        script.event(SyntheticHCI.legacyAdvertisingReports([(0x00, 1, peer, [2, 1, 6, 5, 9] + Array("Seed".utf8), -40)]))
        script.event(SyntheticHCI.extendedAdvertisingReport(eventType: 0x1B, address: peer, data: [3, 3, 0x0F, 0x18]))
        script.command(SyntheticHCI.leCreateConnection(peer: peer, peerType: 1))
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x40, peer: peer, peerType: 1, enhanced: true))
        script.att(handle: 0x40, .exchangeMTURequest, [0x05, 0x02], from: .hostToController)
        script.att(handle: 0x40, .exchangeMTUResponse, [0xF7, 0x00], from: .controllerToHost)
        script.att(handle: 0x40, .readByGroupTypeRequest, [1, 0, 0xFF, 0xFF, 0x00, 0x28], from: .hostToController)
        script.att(handle: 0x40, .readByGroupTypeResponse, [6, 1, 0, 5, 0, 0x00, 0x18], from: .controllerToHost)
        script.att(handle: 0x40, .readByTypeRequest, [1, 0, 0xFF, 0xFF, 0x03, 0x28], from: .hostToController)
        script.att(handle: 0x40, .readByTypeResponse, [7, 2, 0, 0x12, 3, 0, 0x00, 0x2A], from: .controllerToHost)
        script.att(handle: 0x40, .findInformationRequest, [4, 0, 5, 0], from: .hostToController)
        script.att(handle: 0x40, .findInformationResponse, [1, 4, 0, 0x02, 0x29], from: .controllerToHost)
        script.att(handle: 0x40, .writeRequest, [4, 0, 1, 0], from: .hostToController)
        script.att(handle: 0x40, .errorResponse, [0x12, 4, 0, 0x05], from: .controllerToHost)
        script.l2cap(handle: 0x40, channel: 6, [0x01, 0x03, 0x00, 0x0D, 0x10, 0x07, 0x07], from: .hostToController)
        script.l2cap(handle: 0x40, channel: 6, [0x02, 0x03, 0x00, 0x09, 0x10, 0x07, 0x07], from: .controllerToHost)
        script.event(SyntheticHCI.encryptionChange(handle: 0x40, keySize: 16))
        script.att(handle: 0x40, .handleValueNotification, [3, 0] + Array(0..<60), from: .controllerToHost, fragment: 27)
        script.att(handle: 0x40, .multipleHandleValueNotification, [3, 0, 2, 0, 1, 2, 5, 0, 1, 0, 9], from: .controllerToHost)
        script.att(handle: 0x40, .handleValueIndication, [3, 0, 7], from: .controllerToHost)
        script.att(handle: 0x40, .handleValueConfirmation, [], from: .hostToController)
        script.att(handle: 0x40, .prepareWriteRequest, [4, 0, 0, 0, 1, 2, 3], from: .hostToController)
        script.att(handle: 0x40, .prepareWriteResponse, [4, 0, 0, 0, 1, 2, 3], from: .controllerToHost)
        script.att(handle: 0x40, .executeWriteRequest, [1], from: .hostToController)
        script.att(handle: 0x40, .executeWriteResponse, [], from: .controllerToHost)
        script.event(SyntheticHCI.disconnectionComplete(handle: 0x40))
        return script.packets
    }

    /// The session as an iPhone logs it: a note first, power and configuration records between the packets.
    static func packetLoggerSession(_ packets: [CapturePacket]) -> [CapturePacket] {
        var logged = packets
        logged.insert(CapturePacket(kind: .packetLogger(type: 0xFC), bytes: Array("Product: iPhone17,2".utf8)), at: 0)
        logged.insert(CapturePacket(kind: .packetLogger(type: 0xFD), bytes: [0, 1, 2, 3]), at: 4)
        logged.insert(CapturePacket(kind: .packetLogger(type: 0xFB), bytes: Array("power".utf8)), at: 8)
        return logged
    }

    static func write(to directory: String) {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let packets = session()
        var monitor = packets
        monitor.insert(
            CapturePacket(
                kind: .monitor(opcode: 0), bytes: [0, 0] + BluetoothAddress("00:AA:01:01:00:01")!.littleEndian + Array("hci0\0\0\0\0".utf8)),
            at: 0)
        let files: [(String, [UInt8])] = [
            ("session.btsnoop", CaptureWriter.btsnoop(packets, datalink: 1002)),
            ("session-h1.btsnoop", CaptureWriter.btsnoop(packets, datalink: 1001)),
            ("session-monitor.btsnoop", CaptureWriter.btsnoop(monitor, datalink: 2001)),
            ("session-187.pcap", CaptureWriter.pcap(packets, linktype: 187)),
            ("session-201-be-ns.pcap", CaptureWriter.pcap(packets, linktype: 201, bigEndian: true, nanoseconds: true)),
            ("session-254.pcap", CaptureWriter.pcap(monitor, linktype: 254)),
            ("session.pcapng", CaptureWriter.pcapng(packets, interfaces: [.init(linktype: 201, resolution: 9, name: "bt")])),
            ("session-be.pcapng", CaptureWriter.pcapng(monitor, interfaces: [.init(linktype: 254)], bigEndian: true)),
            ("session.pklg", CaptureWriter.packetLogger(packetLoggerSession(packets))),
            ("session-be.pklg", CaptureWriter.packetLogger(packetLoggerSession(packets), bigEndian: true)),
            ("hid-keyboard.btsnoop", HIDSession.script().btsnoop()),
        ]
        for (name, bytes) in files {
            _ = FileManager.default.createFile(atPath: "\(directory)/\(name)", contents: Data(bytes))
        }
    }
}
