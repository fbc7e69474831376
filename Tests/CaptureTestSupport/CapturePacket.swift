import Capture

/// One packet to write into a synthetic capture: an HCI packet (no H4 type byte) or a raw Linux-monitor record.
public struct CapturePacket: Sendable {
    public enum Kind: Sendable, Hashable {
        case command, event, acl, sco, iso
        /// A Linux-monitor record that is not an HCI packet (0 New Index, 12 System Note, …).
        case monitor(opcode: UInt16)
        /// A PacketLogger record that is not an HCI packet (0xFC note, 0xFB power, 0xF7 syslog, …), by its type byte.
        case packetLogger(type: UInt8)
    }

    public var kind: Kind
    /// For ACL, SCO and ISO; commands are always sent and events received.
    public var direction: HCIDirection
    public var controller: UInt16
    /// Microseconds since the Unix epoch.
    public var timestamp: Int64
    public var bytes: [UInt8]
    /// Keep only this many bytes of the record's data in the file (a filtered log); the original length stays.
    public var keep: Int?
    /// pcapng: the interface it is written on.
    public var interface: Int

    public init(
        kind: Kind, direction: HCIDirection = .unknown, controller: UInt16 = 0, timestamp: Int64 = 1_700_000_000_000_000,
        bytes: [UInt8], keep: Int? = nil, interface: Int = 0
    ) {
        self.kind = kind
        self.direction = kind == .command ? .hostToController : kind == .event ? .controllerToHost : direction
        self.controller = controller
        self.timestamp = timestamp
        self.bytes = bytes
        self.keep = keep
        self.interface = interface
    }

    /// The H4 packet type byte.
    public var h4Type: UInt8 {
        switch kind {
        case .command: 0x01
        case .acl: 0x02
        case .sco: 0x03
        case .event: 0x04
        case .iso: 0x05
        case .monitor, .packetLogger: 0xFF
        }
    }

    /// The PacketLogger record type; nil for ISO, which PacketLogger has none for.
    public var packetLoggerType: UInt8? {
        let received = direction == .controllerToHost
        switch kind {
        case .command: return 0x00
        case .event: return 0x01
        case .acl: return received ? 0x03 : 0x02
        case .sco: return received ? 0x09 : 0x08
        case .iso, .monitor: return nil
        case .packetLogger(let type): return type
        }
    }

    /// The Linux-monitor opcode.
    public var monitorOpcode: UInt16 {
        let received = direction == .controllerToHost
        switch kind {
        case .command: return 2
        case .event: return 3
        case .acl: return received ? 5 : 4
        case .sco: return received ? 7 : 6
        case .iso: return received ? 19 : 18
        case .monitor(let opcode): return opcode
        case .packetLogger: return 0xFFFF
        }
    }
}
