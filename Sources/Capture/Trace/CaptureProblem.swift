import Bluetooth

/// Something wrong with a capture, located by frame (1-based, as Wireshark numbers them) and byte offset in
/// the file where known. Reading problems stop the reader; everything before them was delivered.
public struct CaptureProblem: Error, Sendable, Hashable, CustomStringConvertible {
    public var frame: Int?
    /// Offset in the file of the damaged header or record.
    public var offset: Int?
    public var reason: Reason

    public init(_ reason: Reason, frame: Int? = nil, offset: Int? = nil) {
        self.reason = reason
        self.frame = frame
        self.offset = offset
    }

    /// Why: one case per kind of damage, each with a one-line description.
    public enum Reason: Sendable, Hashable, CustomStringConvertible {
        // Opening the file: nothing can be read.
        case cannotOpen(path: String, reason: String)
        case empty
        case unknownFormat(firstBytes: [UInt8])
        case unsupportedVersion(format: String, version: String)
        case unsupportedDatalink(UInt32)
        case unsupportedLinktype(UInt32)

        // Reading: the reader stops here.
        case truncatedHeader(what: String, needed: Int, available: Int)
        case truncatedRecord(needed: Int, available: Int)
        case absurdLength(what: String, length: UInt64, limit: Int)
        case badBlock(String)
        /// A record whose length field is less than the part of its header it counts (PacketLogger's timestamp).
        case recordTooShort(length: Int, minimum: Int)
        case readFailed(String)

        // One record or block: skipped, reading goes on.
        case unknownInterface(Int)
        case interfaceNotHCI(interface: Int, linktype: UInt32)
        case emptyRecord
        case unknownPacketType(UInt8)
        case shortPacket(what: String, needed: Int, available: Int)
        case lengthMismatch(what: String, declared: Int, actual: Int)
        case malformedEvent(code: UInt8, String)
        case malformedCommand(opcode: UInt16, String)

        // ACL reassembly, L2CAP, ATT, SMP: the PDU is dropped or marked.
        case continuationWithoutStart(handle: UInt16)
        case startWhileIncomplete(handle: UInt16, received: Int, expected: Int)
        case oversizeFragment(handle: UInt16, expected: Int, received: Int)
        case incompleteAtEnd(handle: UInt16, received: Int, expected: Int)
        /// Dropped to keep reassembly within its limits (``CaptureNote/reassemblyLimited(streams:bytes:)``).
        case reassemblyLimit(handle: UInt16, received: Int, expected: Int)
        case truncatedACL(handle: UInt16)
        case malformedATT(opcode: UInt8, String)
        case unmatchedResponse(opcode: UInt8, String)
        case malformedSMP(code: UInt8, String)
        case malformedSignalling(code: UInt8, String)
        /// A K-frame of an LE credit-based channel that fits no SDU.
        case malformedChannelFrame(channel: UInt16, String)

        /// Whether the reader stops at this problem (nothing after it is read).
        public var endsReading: Bool {
            switch self {
            case .cannotOpen, .empty, .unknownFormat, .unsupportedVersion, .unsupportedDatalink, .unsupportedLinktype,
                .truncatedHeader, .truncatedRecord, .absurdLength, .badBlock, .recordTooShort, .readFailed:
                true
            default:
                false
            }
        }

        public var description: String {
            switch self {
            case .cannotOpen(let path, let reason): "cannot open \(path): \(reason)"
            case .empty: "the file is empty"
            case .unknownFormat(let bytes):
                "not a btsnoop, pcap, pcapng or PacketLogger file (starts with \(bytes.isEmpty ? "nothing" : Hex.string(bytes, separator: " ")))"
            case .unsupportedVersion(let format, let version): "\(format) version \(version) is not supported"
            case .unsupportedDatalink(let datalink):
                "btsnoop datalink \(datalink) is not supported (only 1001 HCI, 1002 H4 and 2001 Linux monitor)"
            case .unsupportedLinktype(let linktype): "unsupported linktype \(linktype)\(Self.linktypeHint(linktype))"
            case .truncatedHeader(let what, let needed, let available):
                "\(what) cut short: \(needed) bytes needed, \(available) in the file"
            case .truncatedRecord(let needed, let available):
                "record cut short: \(needed) bytes needed, \(available) left in the file"
            case .absurdLength(let what, let length, let limit):
                "\(what) claims \(length) bytes (more than the \(limit) a record can hold)"
            case .badBlock(let reason): "bad block: \(reason)"
            case .recordTooShort(let length, let minimum):
                "record length \(length) is less than the \(minimum) bytes it must count"
            case .readFailed(let reason): "read failed: \(reason)"
            case .unknownInterface(let interface): "packet names interface \(interface), which no interface block described"
            case .interfaceNotHCI(let interface, let linktype):
                "interface \(interface) has linktype \(linktype)\(Self.linktypeHint(linktype)); its packets are skipped"
            case .emptyRecord: "empty record"
            case .unknownPacketType(let type): "unknown HCI packet type 0x\(Hex.byte(type))"
            case .shortPacket(let what, let needed, let available):
                "\(what) too short: \(needed) bytes needed, \(available) present"
            case .lengthMismatch(let what, let declared, let actual):
                "\(what) length field says \(declared) bytes, \(actual) present"
            case .malformedEvent(let code, let reason): "HCI event 0x\(Hex.byte(code)): \(reason)"
            case .malformedCommand(let opcode, let reason): "HCI command 0x\(Hex.word(opcode)): \(reason)"
            case .continuationWithoutStart(let handle):
                "ACL continuation fragment on handle 0x\(Hex.word(handle)) without a start fragment: dropped"
            case .startWhileIncomplete(let handle, let received, let expected):
                "ACL start fragment on handle 0x\(Hex.word(handle)) while \(received) of \(expected) bytes were pending: those are dropped"
            case .oversizeFragment(let handle, let expected, let received):
                "ACL fragments on handle 0x\(Hex.word(handle)) carry \(received) bytes for an L2CAP PDU of \(expected): dropped"
            case .incompleteAtEnd(let handle, let received, let expected):
                "L2CAP PDU on handle 0x\(Hex.word(handle)) incomplete at the end (\(received) of \(expected) bytes)"
            case .reassemblyLimit(let handle, let received, let expected):
                "L2CAP PDU on handle 0x\(Hex.word(handle)) dropped incomplete (\(received) of \(expected) bytes): too many PDUs or bytes pending reassembly"
            case .truncatedACL(let handle):
                "ACL packet on handle 0x\(Hex.word(handle)) truncated in the capture: not reassembled"
            case .malformedATT(let opcode, let reason): "ATT opcode 0x\(Hex.byte(opcode)): \(reason)"
            case .unmatchedResponse(let opcode, let reason): "ATT response 0x\(Hex.byte(opcode)) \(reason)"
            case .malformedSMP(let code, let reason): "SMP code 0x\(Hex.byte(code)): \(reason)"
            case .malformedSignalling(let code, let reason): "L2CAP signalling code 0x\(Hex.byte(code)): \(reason)"
            case .malformedChannelFrame(let channel, let reason): "L2CAP channel 0x\(Hex.word(channel)): \(reason)"
            }
        }

        static func linktypeHint(_ linktype: UInt32) -> String {
            switch linktype {
            case 251, 256, 272:
                " (251/256/272 are over-the-air sniffer captures, not HCI; capture HCI with Android's snoop log or btmon)"
            case 255: " (255 is an Ubertooth BR/EDR baseband capture, not HCI)"
            default: " (readable: 187 H4, 201 H4 with direction, 254 Linux monitor)"
            }
        }
    }

    public var description: String {
        switch (frame, offset) {
        case (let frame?, let offset?): "frame \(frame) (byte \(offset)): \(reason)"
        case (let frame?, nil): "frame \(frame): \(reason)"
        case (nil, let offset?): "byte \(offset): \(reason)"
        case (nil, nil): reason.description
        }
    }
}
