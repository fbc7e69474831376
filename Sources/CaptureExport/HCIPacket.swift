import Bluetooth

/// HCI packets as a host and its controller exchange them (HCI header and parameters, no H4 type byte): the
/// commands and events of an LE central's log, ACL data carrying L2CAP, and ATT PDUs.
///
/// Length fields are clamped, never trapped on: callers keep parameters within HCI's sizes (255 bytes an event).
public enum HCIPacket {
    public static func command(_ opcode: UInt16, _ parameters: [UInt8] = []) -> [UInt8] {
        [UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(clamping: parameters.count)] + parameters
    }

    public static func event(_ code: UInt8, _ parameters: [UInt8]) -> [UInt8] { [code, UInt8(clamping: parameters.count)] + parameters }

    public static func leMeta(_ subevent: UInt8, _ parameters: [UInt8]) -> [UInt8] { event(0x3E, [subevent] + parameters) }

    static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

    /// LE Connection Complete (0x01) or LE Enhanced Connection Complete (0x0A); `role` is the local
    /// controller's (0 central).
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

    /// Encryption Change (0x08), or its v2 (0x59) with the key size.
    public static func encryptionChange(handle: UInt16, enabled: UInt8 = 1, keySize: UInt8? = nil) -> [UInt8] {
        event(keySize == nil ? 0x08 : 0x59, [0] + le16(handle) + [enabled] + (keySize.map { [$0] } ?? []))
    }

    /// Command Complete for Read BD_ADDR: the controller's public address.
    public static func readBDAddrComplete(_ address: BluetoothAddress) -> [UInt8] {
        event(0x0E, [1] + le16(0x1009) + [0] + address.littleEndian)
    }

    /// LE Set Random Address: the random address the controller uses.
    public static func leSetRandomAddress(_ address: BluetoothAddress) -> [UInt8] { command(0x2005, address.littleEndian) }

    /// LE Create Connection; `filterPolicy` 1 connects to whichever device of the accept list answers first, and
    /// the peer address is then ignored (sent as zeros).
    public static func leCreateConnection(peer: BluetoothAddress, peerType: UInt8 = 0, ownType: UInt8 = 0, filterPolicy: UInt8 = 0)
        -> [UInt8]
    {
        command(
            0x200D,
            le16(0x60) + le16(0x30) + [filterPolicy, peerType] + peer.littleEndian + [ownType] + le16(24) + le16(40) + le16(0)
                + le16(500) + le16(0) + le16(0))
    }

    /// LE Extended Create Connection on the LE 1M PHY, as an iPhone sends it.
    public static func leExtendedCreateConnection(peer: BluetoothAddress, peerType: UInt8 = 0, ownType: UInt8 = 1, filterPolicy: UInt8 = 0)
        -> [UInt8]
    {
        command(
            0x2043,
            [filterPolicy, ownType, peerType] + peer.littleEndian + [0x01] + le16(480) + le16(20) + le16(8) + le16(24) + le16(0)
                + le16(72) + le16(0) + le16(0))
    }

    /// One legacy advertising report per entry, all in one event.
    public static func legacyAdvertisingReports(
        _ reports: [(type: UInt8, addressType: UInt8, address: BluetoothAddress, data: [UInt8], rssi: Int8)]
    ) -> [UInt8] {
        var parameters: [UInt8] = [UInt8(clamping: reports.count)]
        for report in reports {
            parameters +=
                [report.type, report.addressType] + report.address.littleEndian + [UInt8(clamping: report.data.count)] + report.data
            parameters.append(UInt8(bitPattern: report.rssi))
        }
        return leMeta(0x02, parameters)
    }

    /// One extended advertising report; `eventType` bits (connectable 0, scannable 1, directed 2, scan
    /// response 3, legacy 4, data status 5–6).
    /// `primaryPHY`/`secondaryPHY`: 1 LE 1M, 2 LE 2M, 3 LE Coded (secondary 0: none).
    public static func extendedAdvertisingReport(
        eventType: UInt16, addressType: UInt8 = 1, address: BluetoothAddress, data: [UInt8],
        rssi: Int8 = -60, sid: UInt8 = 0xFF, primaryPHY: UInt8 = 1, secondaryPHY: UInt8 = 0
    ) -> [UInt8] {
        var parameters: [UInt8] =
            [1] + le16(eventType) + [addressType] + address.littleEndian + [primaryPHY, secondaryPHY, sid, 127, UInt8(bitPattern: rssi)]
        parameters += le16(0) + [0] + [UInt8](repeating: 0, count: 6) + [UInt8(clamping: data.count)] + data
        return leMeta(0x0D, parameters)
    }

    /// An L2CAP basic frame: length, channel, payload.
    public static func l2cap(channel: UInt16, _ payload: [UInt8]) -> [UInt8] {
        le16(UInt16(clamping: payload.count)) + le16(channel) + payload
    }

    /// ACL packets carrying `l2cap`, split into fragments of at most `fragment` bytes (the first with
    /// packet boundary `start`, the rest continuations).
    public static func acl(handle: UInt16, _ l2cap: [UInt8], fragment: Int = 251, start: UInt8 = 0b10) -> [[UInt8]] {
        let fragment = max(fragment, 1)
        var packets: [[UInt8]] = []
        var offset = 0
        repeat {
            let piece = Array(l2cap[offset..<min(offset + fragment, l2cap.count)])
            let boundary: UInt16 = offset == 0 ? UInt16(start) : 0b01
            packets.append(le16(handle & 0x0FFF | boundary << 12) + le16(UInt16(clamping: piece.count)) + piece)
            offset += fragment
        } while offset < l2cap.count
        return packets
    }

    /// An ATT PDU: opcode and parameters.
    public static func att(_ opcode: ATTOpcode, _ parameters: [UInt8] = []) -> [UInt8] { [opcode.rawValue] + parameters }
}
