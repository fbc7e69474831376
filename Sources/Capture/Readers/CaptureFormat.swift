/// The container format of a capture file, told by its first bytes (never by its name).
public enum CaptureFormat: Sendable, Hashable, CustomStringConvertible {
    /// btsnoop with its datalink: 1001 un-encapsulated HCI, 1002 H4 (Android), 2001 Linux monitor (btmon).
    case btsnoop(datalink: UInt32)
    /// libpcap with its linktype: 187 H4, 201 H4 with direction, 254 Linux monitor.
    case pcap(linktype: UInt32, nanoseconds: Bool, bigEndian: Bool)
    /// pcapng; each interface has its own linktype (``CaptureReader/linktypes``).
    case pcapng
    /// Apple PacketLogger (`.pklg`): no magic, told by its first records; older files big-endian, iOS's little-endian.
    case packetLogger(bigEndian: Bool)

    /// The most a record can hold (Wireshark's limit too): longer claims are corruption.
    public static let maximumRecordLength = 262_144

    public var description: String {
        switch self {
        case .btsnoop(let datalink): "btsnoop (datalink \(datalink))"
        case .pcap(let linktype, let nanoseconds, let bigEndian):
            "pcap (linktype \(linktype), \(nanoseconds ? "ns" : "µs"), \(bigEndian ? "big" : "little")-endian)"
        case .pcapng: "pcapng"
        case .packetLogger(let bigEndian): "PacketLogger (\(bigEndian ? "big" : "little")-endian)"
        }
    }

    /// The format `bytes` (the file's first bytes, 8 are enough) start with by their magic; nil when none
    /// (PacketLogger files have none: ``PacketLoggerReader/sniff(_:)``).
    static func sniff(_ bytes: ArraySlice<UInt8>) -> Sniffed? {
        if bytes.count >= 8, bytes.prefix(8).elementsEqual("btsnoop\0".utf8) {
            return .btsnoop
        }
        guard bytes.count >= 4 else { return nil }
        var cursor = ByteCursor(bytes)
        switch cursor.u32(bigEndian: true) {
        case 0xA1B2_C3D4: return .pcap(bigEndian: true, nanoseconds: false)
        case 0xD4C3_B2A1: return .pcap(bigEndian: false, nanoseconds: false)
        case 0xA1B2_3C4D: return .pcap(bigEndian: true, nanoseconds: true)
        case 0x4D3C_B2A1: return .pcap(bigEndian: false, nanoseconds: true)
        case 0x0A0D_0D0A: return .pcapng
        default: return nil
        }
    }

    enum Sniffed: Equatable {
        case btsnoop
        case pcap(bigEndian: Bool, nanoseconds: Bool)
        case pcapng
    }

    /// How a pcap/pcapng linktype wraps HCI packets; nil for linktypes that are not HCI.
    static func encapsulation(linktype: UInt32) -> Encapsulation? {
        switch linktype {
        case 187: .h4WithoutDirection
        case 201: .h4WithDirectionHeader
        case 254: .monitorWithHeader
        default: nil
        }
    }
}
