import Bluetooth

/// Something worth knowing about a capture that is not damage: what it lacks, what was inferred, what
/// was left undecoded. Each comes once (per handle or channel where it names one).
public enum CaptureNote: Sendable, Hashable, CustomStringConvertible {
    /// ACL data but not one HCI event: connections are made up per handle from their first data.
    case attOnlyExport
    /// A handle carried LE data with no connection event before it.
    case connectionFromACLData(connection: Int, controller: UInt16, handle: UInt16, frame: Int)
    /// A connection's local role was inferred from who sent discovery requests (or assumed central).
    case roleInferred(connection: Int, role: ConnectionRole, evidenceFrame: Int?)
    /// No advertising reports at all.
    case noAdvertisingReports
    /// Records shorter than their packets.
    case truncatedRecords(count: Int)
    /// The format has no direction for ACL data (linktype 187).
    case noACLDirection
    /// ACL data on a handle with no connection and no LE fixed channel: ignored (vendor logs use such handles).
    case unknownHandle(controller: UInt16, handle: UInt16, frame: Int)
    /// ACL data on a handle controllers use for diagnostics (above 0x0EFF; Qualcomm's 0x0EDC): ignored.
    case vendorHandle(controller: UInt16, handle: UInt16, frame: Int)
    /// An L2CAP channel not decoded: LE credit-based channels (EATT when PSM 0x0027) and the like.
    case undecodedChannel(connection: Int, channel: UInt16, psm: UInt16?, frame: Int)
    /// BR/EDR connections were present; only ATT over BR/EDR is decoded from them.
    case classicConnections(count: Int)
    /// Timestamps before 2000 or after 2100: the writer's clock or epoch was wrong; use relative times.
    case implausibleTimestamps(first: Int64)
    /// More L2CAP PDUs (or bytes) pending reassembly at once than kept: the oldest were dropped, each a problem.
    case reassemblyLimited(streams: Int, bytes: Int)
    /// PacketLogger records of types that are not HCI and not among the diagnostic ones known (Apple adds
    /// record types): skipped, not damage. `types` in the order met, `count` records in all.
    case unknownRecordTypes(types: [UInt8], count: Int, firstFrame: Int)

    /// Notes about the whole capture (kept always); the others name one connection, handle or channel
    /// (the first 1000 are kept).
    public var isCaptureWide: Bool {
        switch self {
        case .attOnlyExport, .noAdvertisingReports, .truncatedRecords, .noACLDirection, .classicConnections, .implausibleTimestamps,
            .reassemblyLimited, .unknownRecordTypes:
            true
        default: false
        }
    }

    /// How many notes naming one connection, handle or channel a trace or summary keeps.
    public static let limit = 1000

    public var description: String {
        switch self {
        case .attOnlyExport:
            "ATT-only export: ACL data but no HCI events, so no advertising, peer addresses or roles; connections made up per handle"
        case .connectionFromACLData(let connection, let controller, let handle, let frame):
            "connection \(connection): ACL data on handle 0x\(Hex.word(handle)) (controller \(controller)) from frame \(frame) with no connection event before it; peer unknown"
        case .roleInferred(let connection, let role, let frame):
            if let frame {
                "connection \(connection): local role inferred as \(role) from the discovery request in frame \(frame)"
            } else {
                "connection \(connection): local role assumed \(role) (no connection event, no discovery request)"
            }
        case .noAdvertisingReports:
            "no advertising reports: the phone was not scanning when the capture ran (or the log was filtered)"
        case .truncatedRecords(let count):
            "\(count) truncated records (included length below the original): a filtered Android snoop log; their missing bytes are not guessed"
        case .noACLDirection:
            "linktype 187 has no direction: ATT directions inferred from opcodes (the client taken as central)"
        case .unknownHandle(let controller, let handle, let frame):
            "ACL data on handle 0x\(Hex.word(handle)) (controller \(controller), first in frame \(frame)) with no connection and no LE channel: ignored"
        case .vendorHandle(let controller, let handle, let frame):
            "ACL data on handle 0x\(Hex.word(handle)) (controller \(controller), first in frame \(frame)) is controller diagnostics (vendor handle): ignored"
        case .undecodedChannel(let connection, let channel, let psm, let frame):
            "connection \(connection): L2CAP channel 0x\(Hex.word(channel))\(psm.map { " (PSM 0x\(Hex.word($0))\($0 == L2CAPPSM.eatt ? ", EATT" : ""))" } ?? "") from frame \(frame) not decoded (credit-based channels are unsupported)"
        case .classicConnections(let count):
            "\(count) BR/EDR connections: only ATT over BR/EDR is decoded from them"
        case .reassemblyLimited(let streams, let bytes):
            "ACL reassembly limit hit: more than \(streams) L2CAP PDUs or \(bytes / 1024) KiB pending at once (fragments claimed but never sent); the oldest pending PDUs were dropped"
        case .implausibleTimestamps(let first):
            "timestamps implausible (first \(first / 1_000_000) s from the Unix epoch): the writer's clock or epoch was wrong; use relative times"
        case .unknownRecordTypes(let types, let count, let firstFrame):
            "\(count) PacketLogger record\(count == 1 ? "" : "s") of type\(types.count == 1 ? "" : "s") \(types.map { "0x" + Hex.byte($0) }.joined(separator: ", ")) (first in frame \(firstFrame)): not HCI, skipped"
        }
    }
}
