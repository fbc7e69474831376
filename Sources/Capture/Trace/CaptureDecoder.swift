import Bluetooth

/// Decodes HCI records into ``CaptureEvent``s, keeping what spans records: controllers, the connection
/// each handle currently names, ACL reassembly, outstanding ATT requests, extended-advertising fragments.
///
/// Feed every record in order to ``decode(_:_:)``, then call ``finish(_:)`` once: it reports what was
/// left incomplete and the capture-wide notes.
public struct CaptureDecoder {
    struct HandleKey: Hashable {
        var controller: UInt16
        var handle: UInt16
    }

    struct ChannelKey: Hashable {
        var connection: Int
        var sender: HCIDirection
        var channel: UInt16
    }

    /// Counts over the records decoded so far.
    public struct Statistics: Sendable, Hashable {
        public var records = 0
        public var commands = 0
        public var events = 0
        public var acl = 0
        public var sco = 0
        public var iso = 0
        public var monitor = 0
        public var truncated = 0
        public var advertisingReports = 0
        public var connections = 0
        public var classicConnections = 0
        public var attPDUs = 0
        public var firstTimestamp: Int64?
        public var lastTimestamp: Int64?
    }

    public internal(set) var statistics = Statistics()
    var controllers: [UInt16: ControllerInfo] = [:]
    var open: [HandleKey: CaptureConnection] = [:]
    var nextConnectionID = 0
    var reassembler = ACLReassembler()
    var pairing = ATTPairing()
    var advertising = AdvertisingAssembler()
    /// The target of each controller's last LE Create Connection command, until a connection completes.
    var createTargets: [UInt16: DeviceAddress] = [:]
    /// Dynamic channels by the side sending on them: their PSM.
    var channels: [ChannelKey: UInt16] = [:]
    var channelRequests: [ChannelKey: UInt16] = [:]
    /// LE credit-based requests waiting for their response, by connection, requester and identifier: their PSM and
    /// the requester's channel.
    var creditRequests: [ChannelKey: (psm: UInt16, source: UInt16)] = [:]
    /// SDUs of credit-based channels being put together from their K-frames.
    var channelSDUs = ChannelSDUAssembler()
    /// Connections whose inferred role has been settled by a discovery request.
    var settledRoles: Set<Int> = []
    var noted: Set<CaptureNote> = []
    /// Handles whose data was ignored (no connection, no LE channel), noted once each.
    var ignoredHandles: Set<HandleKey> = []
    /// Channels noted as not decoded, once each.
    var undecodedChannels: Set<ChannelKey> = []
    var sawUnknownDirection = false
    /// Events of the record being decoded, handed out when it is done.
    var pending: [CaptureEvent] = []

    public init() {}

    /// Decodes one record; `emit` gets what it produced, in order.
    public mutating func decode(_ record: HCIRecord, _ emit: (CaptureEvent) -> Void) {
        count(record)
        let controller = record.controller ?? 0
        let moment = CaptureMoment(frame: record.frame, timestamp: record.timestamp)
        switch record.kind {
        case .command: decodeCommand(record, controller: controller, moment: moment)
        case .event: decodeEvent(record, controller: controller, moment: moment)
        case .acl: decodeACL(record, controller: controller, moment: moment)
        case .sco, .iso: break
        case .monitor(let monitor): decodeMonitor(monitor, controller: controller, moment: moment)
        }
        flush(emit)
    }

    /// Ends decoding: incomplete PDUs and advertising, unanswered requests, capture-wide notes.
    public mutating func finish(_ emit: (CaptureEvent) -> Void) {
        for (reason, frame) in reassembler.finish() { report(reason, frame: frame) }
        for report in advertising.finish() { emitReport(report) }
        pairing.flush(connection: nil, .captureEnded) { pending.append(.attTransaction($0)) }
        if statistics.events == 0 && statistics.acl > 0 { note(.attOnlyExport) }
        if statistics.advertisingReports == 0 && statistics.records > 0 { note(.noAdvertisingReports) }
        if statistics.truncated > 0 { note(.truncatedRecords(count: statistics.truncated)) }
        if statistics.classicConnections > 0 { note(.classicConnections(count: statistics.classicConnections)) }
        if let first = statistics.firstTimestamp, first < 946_684_800_000_000 || first > 4_102_444_800_000_000 {
            note(.implausibleTimestamps(first: first))
        }
        flush(emit)
    }

    private mutating func count(_ record: HCIRecord) {
        statistics.records += 1
        switch record.kind {
        case .command: statistics.commands += 1
        case .event: statistics.events += 1
        case .acl: statistics.acl += 1
        case .sco: statistics.sco += 1
        case .iso: statistics.iso += 1
        case .monitor: statistics.monitor += 1
        }
        if record.isTruncated { statistics.truncated += 1 }
        if let timestamp = record.timestamp {
            if statistics.firstTimestamp == nil { statistics.firstTimestamp = timestamp }
            statistics.lastTimestamp = timestamp
        }
    }

    private mutating func flush(_ emit: (CaptureEvent) -> Void) {
        for event in pending { emit(event) }
        pending.removeAll(keepingCapacity: true)
    }

    mutating func report(_ reason: CaptureProblem.Reason, frame: Int?, offset: Int? = nil) {
        pending.append(.problem(CaptureProblem(reason, frame: frame, offset: offset)))
    }

    mutating func note(_ note: CaptureNote) {
        if noted.insert(note).inserted { pending.append(.note(note)) }
    }

    mutating func controllerInfo(_ index: UInt16, _ change: (inout ControllerInfo) -> Void) {
        var info = controllers[index] ?? ControllerInfo(index: index)
        let before = controllers[index]
        change(&info)
        if info != before {
            controllers[index] = info
            pending.append(.controller(info))
        }
    }

    private mutating func decodeMonitor(_ record: MonitorRecord, controller: UInt16, moment: CaptureMoment) {
        switch record {
        case .newIndex(_, _, let address, let name):
            controllerInfo(controller) {
                $0.publicAddress = address
                $0.kernelName = name
            }
        case .indexInfo(let address, _):
            controllerInfo(controller) { $0.publicAddress = address }
        case .deleteIndex, .closeIndex:
            closeAll(controller: controller, moment: moment)
        default:
            break
        }
    }
}
