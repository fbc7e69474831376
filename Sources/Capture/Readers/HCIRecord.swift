import Bluetooth

/// One record of a capture as HCI sees it: a command, event, ACL/SCO/ISO packet or a Linux-monitor record.
///
/// ``payload`` is a slice of the reader's buffer: copy it (`Array(record.payload)`) to keep it past the
/// next record, or the whole read chunk stays alive with it.
public struct HCIRecord: Sendable {
    /// 1-based, counting every packet record of the file as Wireshark numbers frames.
    public var frame: Int
    /// Microseconds since the Unix epoch (btsnoop's year-0 epoch converted); nil when the file has none.
    public var timestamp: Int64?
    public var direction: HCIDirection
    /// The controller (adapter index) of Linux-monitor formats; nil for single-controller formats.
    public var controller: UInt16?
    public var kind: HCIPacketKind
    /// The packet without any H4 type byte or pseudo-header: for commands, events and ACL/SCO/ISO their
    /// HCI header and parameters.
    public var payload: ArraySlice<UInt8>
    /// What the payload's length was before the capture cut it; equal to `payload.count` unless truncated.
    public var originalLength: Int
    /// Offset of the record (its header) in the file.
    public var fileOffset: Int

    public init(
        frame: Int, timestamp: Int64?, direction: HCIDirection, controller: UInt16?, kind: HCIPacketKind,
        payload: ArraySlice<UInt8>, originalLength: Int, fileOffset: Int
    ) {
        self.frame = frame
        self.timestamp = timestamp
        self.direction = direction
        self.controller = controller
        self.kind = kind
        self.payload = payload
        self.originalLength = originalLength
        self.fileOffset = fileOffset
    }

    /// Whether the capture kept fewer bytes than the packet had (Android's filtered snoop logs do).
    public var isTruncated: Bool { payload.count < originalLength }
}

/// Which way a packet crossed the HCI.
public enum HCIDirection: Sendable, Hashable, CustomStringConvertible {
    /// Sent by the host (the phone or computer that made the capture).
    case hostToController
    /// Received by the host.
    case controllerToHost
    /// The format does not say (linktype 187 ACL).
    case unknown

    public var opposite: HCIDirection {
        switch self {
        case .hostToController: .controllerToHost
        case .controllerToHost: .hostToController
        case .unknown: .unknown
        }
    }

    public var description: String {
        switch self {
        case .hostToController: "sent"
        case .controllerToHost: "received"
        case .unknown: "unknown direction"
        }
    }
}

/// What an ``HCIRecord`` carries.
public enum HCIPacketKind: Sendable, Hashable, CustomStringConvertible {
    case command
    case event
    case acl
    case sco
    case iso
    /// A Linux-monitor record that is not an HCI packet.
    case monitor(MonitorRecord)

    public var description: String {
        switch self {
        case .command: "command"
        case .event: "event"
        case .acl: "ACL"
        case .sco: "SCO"
        case .iso: "ISO"
        case .monitor(let record): "monitor \(record)"
        }
    }
}

/// A Linux-monitor (btmon) record other than an HCI packet, decoded.
public enum MonitorRecord: Sendable, Hashable, CustomStringConvertible {
    /// A controller appeared: its public address and kernel name (`hci0`).
    case newIndex(type: UInt8, bus: UInt8, address: BluetoothAddress, name: String)
    case deleteIndex
    case openIndex
    case closeIndex
    case indexInfo(address: BluetoothAddress, manufacturer: UInt16)
    case vendorDiagnostic
    case systemNote(String)
    case userLogging(priority: UInt8, ident: String, message: String)
    /// Management-interface traffic (control open/close/command/event) and opcodes we do not know.
    case other(opcode: UInt16)

    public var description: String {
        switch self {
        case .newIndex(_, _, let address, let name): "new index \(name) \(address)"
        case .deleteIndex: "delete index"
        case .openIndex: "open index"
        case .closeIndex: "close index"
        case .indexInfo(let address, let manufacturer): "index info \(address) manufacturer \(manufacturer)"
        case .vendorDiagnostic: "vendor diagnostic"
        case .systemNote(let text): "note: \(text)"
        case .userLogging(_, let ident, let message): "log \(ident): \(message)"
        case .other(let opcode): "opcode \(opcode)"
        }
    }
}
