import Bluetooth
import Capture

/// HCI packets as a controller and host exchange them (HCI header and parameters, no H4 type byte).
public enum SyntheticHCI {
    public static func command(_ opcode: UInt16, _ parameters: [UInt8] = []) -> [UInt8] {
        [UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(parameters.count)] + parameters
    }

    public static func event(_ code: UInt8, _ parameters: [UInt8]) -> [UInt8] { [code, UInt8(parameters.count)] + parameters }

    public static func leMeta(_ subevent: UInt8, _ parameters: [UInt8]) -> [UInt8] { event(0x3E, [subevent] + parameters) }

    static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

    /// LE Connection Complete (0x01) or LE Enhanced Connection Complete (0x0A).
    public static func leConnectionComplete(
        handle: UInt16, role: UInt8 = 0, peer: BluetoothAddress, peerType: UInt8 = 0,
        enhanced: Bool = false, status: UInt8 = 0, interval: UInt16 = 24
    ) -> [UInt8] {
        var parameters = [status] + le16(handle) + [role, peerType] + peer.littleEndian
        if enhanced { parameters += [UInt8](repeating: 0, count: 12) }
        parameters += le16(interval) + le16(0) + le16(500) + [0]
        return leMeta(enhanced ? 0x0A : 0x01, parameters)
    }

    public static func disconnectionComplete(handle: UInt16, reason: UInt8 = 0x13) -> [UInt8] {
        event(0x05, [0] + le16(handle) + [reason])
    }

    public static func encryptionChange(handle: UInt16, enabled: UInt8 = 1, keySize: UInt8? = nil) -> [UInt8] {
        event(keySize == nil ? 0x08 : 0x59, [0] + le16(handle) + [enabled] + (keySize.map { [$0] } ?? []))
    }

    public static func readBDAddrComplete(_ address: BluetoothAddress) -> [UInt8] {
        event(0x0E, [1] + le16(0x1009) + [0] + address.littleEndian)
    }

    public static func leCreateConnection(peer: BluetoothAddress, peerType: UInt8 = 0) -> [UInt8] {
        command(
            0x200D,
            le16(0x60) + le16(0x30) + [0, peerType] + peer.littleEndian + [0] + le16(24) + le16(40) + le16(0) + le16(500) + le16(0)
                + le16(0))
    }

    /// One legacy advertising report per entry, all in one event.
    public static func legacyAdvertisingReports(
        _ reports: [(type: UInt8, addressType: UInt8, address: BluetoothAddress, data: [UInt8], rssi: Int8)]
    ) -> [UInt8] {
        var parameters: [UInt8] = [UInt8(reports.count)]
        for report in reports {
            parameters += [report.type, report.addressType] + report.address.littleEndian + [UInt8(report.data.count)] + report.data
            parameters.append(UInt8(bitPattern: report.rssi))
        }
        return leMeta(0x02, parameters)
    }

    /// One extended advertising report; `eventType` bits (connectable 0, scannable 1, directed 2, scan
    /// response 3, legacy 4, data status 5–6).
    public static func extendedAdvertisingReport(
        eventType: UInt16, addressType: UInt8 = 1, address: BluetoothAddress, data: [UInt8],
        rssi: Int8 = -60, sid: UInt8 = 0xFF
    ) -> [UInt8] {
        var parameters: [UInt8] = [1] + le16(eventType) + [addressType] + address.littleEndian + [1, 0, sid, 127, UInt8(bitPattern: rssi)]
        parameters += le16(0) + [0] + [UInt8](repeating: 0, count: 6) + [UInt8(data.count)] + data
        return leMeta(0x0D, parameters)
    }

    /// An L2CAP basic frame: length, channel, payload.
    public static func l2cap(channel: UInt16, _ payload: [UInt8]) -> [UInt8] { le16(UInt16(payload.count)) + le16(channel) + payload }

    /// ACL packets carrying `l2cap`, split into fragments of at most `fragment` bytes (the first with
    /// packet boundary `start`, the rest continuations).
    public static func acl(handle: UInt16, _ l2cap: [UInt8], fragment: Int = 251, start: UInt8 = 0b10) -> [[UInt8]] {
        var packets: [[UInt8]] = []
        var offset = 0
        repeat {
            let piece = Array(l2cap[offset..<min(offset + fragment, l2cap.count)])
            let boundary: UInt16 = offset == 0 ? UInt16(start) : 0b01
            packets.append(le16(handle & 0x0FFF | boundary << 12) + le16(UInt16(piece.count)) + piece)
            offset += fragment
        } while offset < l2cap.count
        return packets
    }

    /// An ATT PDU: opcode and parameters.
    public static func att(_ opcode: ATTOpcode, _ parameters: [UInt8] = []) -> [UInt8] { [opcode.rawValue] + parameters }
}

/// A capture written step by step, timestamps advancing 1 ms a packet.
public struct CaptureScript: Sendable {
    public var packets: [CapturePacket] = []
    public var time: Int64
    public var controller: UInt16

    public init(start: Int64 = 1_700_000_000_000_000, controller: UInt16 = 0) {
        time = start
        self.controller = controller
    }

    public mutating func add(_ kind: CapturePacket.Kind, _ bytes: [UInt8], direction: HCIDirection = .unknown, keep: Int? = nil) {
        packets.append(CapturePacket(kind: kind, direction: direction, controller: controller, timestamp: time, bytes: bytes, keep: keep))
        time += 1000
    }

    public mutating func command(_ bytes: [UInt8]) { add(.command, bytes) }
    public mutating func event(_ bytes: [UInt8]) { add(.event, bytes) }

    /// An L2CAP PDU on `handle`, fragmented as asked.
    public mutating func l2cap(handle: UInt16, channel: UInt16, _ payload: [UInt8], from direction: HCIDirection, fragment: Int = 251) {
        for packet in SyntheticHCI.acl(handle: handle, SyntheticHCI.l2cap(channel: channel, payload), fragment: fragment) {
            add(.acl, packet, direction: direction)
        }
    }

    /// An ATT PDU on `handle` (CID 4).
    public mutating func att(
        handle: UInt16, _ opcode: ATTOpcode, _ parameters: [UInt8] = [], from direction: HCIDirection, fragment: Int = 251
    ) {
        l2cap(handle: handle, channel: 4, SyntheticHCI.att(opcode, parameters), from: direction, fragment: fragment)
    }

    public func btsnoop(datalink: UInt32 = 1002) -> [UInt8] { CaptureWriter.btsnoop(packets, datalink: datalink) }
    public func packetLogger(bigEndian: Bool = false) -> [UInt8] { CaptureWriter.packetLogger(packets, bigEndian: bigEndian) }
}
