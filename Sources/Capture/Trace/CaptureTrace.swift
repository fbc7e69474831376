import Bluetooth

/// Everything decoded from one capture: controllers, advertisers and their reports, connections, ATT PDUs
/// paired into transactions, SMP and LE signalling, with the problems and notes met on the way.
///
/// With ``Scope/all`` it keeps every PDU, so its size grows with the capture's traffic; a ``Scope/survey`` keeps
/// what choosing a device needs and a ``Scope/device(connections:advertisers:)`` trace only that device's traffic.
/// For counts alone, ``CaptureSummary`` reads any size in bounded memory.
public struct CaptureTrace: Sendable {
    public var format: CaptureFormat
    /// The btsnoop datalink, or the pcap/pcapng linktypes.
    public var linktypes: [UInt32]
    /// Packet records in the file (the last frame number).
    public var frames: Int
    public var statistics: CaptureDecoder.Statistics
    public var controllers: [ControllerInfo] = []
    /// Per controller and advertiser address, in order of first report (at most ``maximumAdvertisers``).
    public var advertisers: [Advertiser] = []
    /// Reports of advertisers past ``maximumAdvertisers`` (counted, not kept).
    public var untrackedAdvertisingReports = 0
    /// How many advertisers a trace keeps: a capture of a crowded room (or a made one) names a million, whose list
    /// nobody reads and whose memory grows with each. An advertiser the capture later connects to is found by its
    /// connections all the same; importing it narrows the trace to its own advertising, which is then kept.
    public static let maximumAdvertisers = 10_000
    /// Indexed by ``CaptureConnection/id``.
    public var connections: [CaptureConnection] = []
    public var failedConnections: [ConnectionAttempt] = []
    /// The ATT PDUs of the connections ``scope`` keeps.
    public var attPDUs: [ATTPDU] = []
    /// ATT PDUs per connection id, of every connection whatever the scope.
    public var attPDUCounts: [Int: Int] = [:]
    /// What this trace keeps.
    public var scope: Scope = .all
    /// In the order they completed (answered, errored, superseded, or at disconnection or the end).
    public var attTransactions: [ATTTransaction] = []
    public var smpPDUs: [SMPPDU] = []
    public var signalling: [L2CAPSignal] = []
    /// SDUs of the LE credit-based channels apps opened, in order.
    public var channelSDUs: [ChannelSDU] = []
    /// Reading and decoding problems, located (the first 1000 of each; ``problemCount`` counts all).
    public var problems: [CaptureProblem] = []
    public var problemCount = 0
    /// Capture-wide notes, and the first 1000 naming one connection, handle or channel.
    public var notes: [CaptureNote] = []

    /// What a trace keeps of the capture: everything, or only what one device needs (its memory then grows with
    /// that device's traffic, not the capture's).
    public enum Scope: Sendable, Equatable {
        case all
        /// Enough to choose a device: connections, advertising reports, ATT PDU counts and the GAP names read;
        /// no PDU, transaction or signal otherwise.
        case survey
        /// Everything of these connections and the advertising of these addresses; of the rest, the connections.
        case device(connections: Set<Int>, advertisers: Set<BluetoothAddress>)

        func keeps(connection: Int) -> Bool {
            switch self {
            case .all: true
            case .survey: false
            case .device(let connections, _): connections.contains(connection)
            }
        }

        func keeps(advertiser: BluetoothAddress) -> Bool {
            switch self {
            case .all, .survey: true
            case .device(_, let advertisers): advertisers.contains(advertiser)
            }
        }
    }

    /// Reads and decodes a capture file; throws when nothing can be read (damage later is in ``problems``).
    public static func read(path: String, scope: Scope = .all) throws(CaptureProblem) -> CaptureTrace {
        try CaptureTrace(reader: CaptureReader(path: path), scope: scope)
    }

    /// Reads and decodes a capture held in memory.
    public static func read(bytes: [UInt8], scope: Scope = .all) throws(CaptureProblem) -> CaptureTrace {
        try CaptureTrace(reader: CaptureReader(bytes: bytes), scope: scope)
    }

    /// Decodes every record `reader` has left, keeping what `scope` says.
    public init(reader: CaptureReader, scope: Scope = .all) {
        self.scope = scope
        format = reader.format
        linktypes = reader.linktypes
        frames = 0
        statistics = CaptureDecoder.Statistics()
        var builder = Builder()
        var decoder = CaptureDecoder()
        while let record = reader.next() {
            decoder.decode(record) { builder.add($0, to: &self) }
        }
        decoder.finish { builder.add($0, to: &self) }
        frames = reader.frames
        linktypes = reader.linktypes
        statistics = decoder.statistics
        controllers.sort { $0.index < $1.index }
        // Reading problems and decoding problems, each in frame order, merged.
        problems = (reader.problems + problems).sorted { ($0.frame ?? 0, $0.offset ?? 0) < ($1.frame ?? 0, $1.offset ?? 0) }
        problemCount += reader.problemCount
        notes += reader.notes
    }

    /// The connection a PDU refers to.
    public func connection(_ id: Int) -> CaptureConnection? { connections.indices.contains(id) ? connections[id] : nil }

    /// Collects events into a trace.
    struct Builder {
        private var advertiserIndex: [AdvertiserKey: Int] = [:]
        private var controllerIndex: [UInt16: Int] = [:]
        /// Addresses some connection has had as its peer (identity or resolvable private address) so far.
        private var connectedPeers: Set<BluetoothAddress> = []
        /// Connections whose role is inferred and not settled yet: where their PDUs are, so they can be
        /// labelled again if the role changes (without scanning the whole trace).
        private var unsettled: [Int: Positions] = [:]

        private struct AdvertiserKey: Hashable {
            var controller: UInt16
            var address: DeviceAddress
        }

        private struct Positions {
            var att: [Int] = []
            var transactions: [Int] = []
            var smp: [Int] = []
            var signalling: [Int] = []
            var channelSDUs: [Int] = []
        }

        mutating func add(_ event: CaptureEvent, to trace: inout CaptureTrace) {
            switch event {
            case .controller(let info):
                if let index = controllerIndex[info.index] {
                    trace.controllers[index] = info
                } else {
                    controllerIndex[info.index] = trace.controllers.count
                    trace.controllers.append(info)
                }
            case .advertisingReport(let report):
                guard trace.scope.keeps(advertiser: report.address.address) else { return }
                let key = AdvertiserKey(controller: report.controller, address: report.address)
                let connected = connectedPeers.contains(report.address.address)
                if let index = advertiserIndex[key] {
                    trace.advertisers[index].add(report, connected: connected)
                } else if trace.advertisers.count < CaptureTrace.maximumAdvertisers {
                    advertiserIndex[key] = trace.advertisers.count
                    var advertiser = Advertiser(controller: report.controller, address: report.address)
                    advertiser.add(report, connected: connected)
                    trace.advertisers.append(advertiser)
                } else {
                    trace.untrackedAdvertisingReports += 1
                }
            case .connection(let connection):
                if let peer = connection.peer?.address { connectedPeers.insert(peer) }
                if let rpa = connection.peerResolvablePrivateAddress { connectedPeers.insert(rpa) }
                if connection.id == trace.connections.count {
                    trace.connections.append(connection)
                    if connection.roleInferred { unsettled[connection.id] = Positions() }
                } else if trace.connections.indices.contains(connection.id) {
                    let before = trace.connections[connection.id].localRole
                    trace.connections[connection.id] = connection
                    if before != connection.localRole { relabel(connection, in: &trace) }
                    if !connection.isOpen { unsettled[connection.id] = nil }
                }
            case .connectionFailed(let attempt): trace.failedConnections.append(attempt)
            case .att(let pdu):
                trace.attPDUCounts[pdu.connection, default: 0] += 1
                guard trace.scope.keeps(connection: pdu.connection) else { return }
                unsettled[pdu.connection]?.att.append(trace.attPDUs.count)
                trace.attPDUs.append(pdu)
            case .attTransaction(let transaction):
                guard
                    trace.scope.keeps(connection: transaction.connection)
                        || (trace.scope == .survey && transaction.outcome == .answered && transaction.requestedType == .deviceName)
                else { return }
                unsettled[transaction.connection]?.transactions.append(trace.attTransactions.count)
                trace.attTransactions.append(transaction)
            case .smp(let pdu):
                guard trace.scope.keeps(connection: pdu.connection) else { return }
                unsettled[pdu.connection]?.smp.append(trace.smpPDUs.count)
                trace.smpPDUs.append(pdu)
            case .signalling(let signal):
                guard trace.scope.keeps(connection: signal.connection) else { return }
                unsettled[signal.connection]?.signalling.append(trace.signalling.count)
                trace.signalling.append(signal)
            case .channelSDU(let sdu):
                guard trace.scope.keeps(connection: sdu.connection) else { return }
                unsettled[sdu.connection]?.channelSDUs.append(trace.channelSDUs.count)
                trace.channelSDUs.append(sdu)
            case .problem(let problem):
                trace.problemCount += 1
                if trace.problems.count < ProblemLog.limit { trace.problems.append(problem) }
            case .note(let note):
                if case .roleInferred(let connection, _, _) = note { unsettled[connection] = nil }
                if note.isCaptureWide || trace.notes.count < CaptureNote.limit { trace.notes.append(note) }
            }
        }

        /// A connection's role was inferred after PDUs were already labelled: label them again.
        private func relabel(_ connection: CaptureConnection, in trace: inout CaptureTrace) {
            guard let role = connection.localRole, let positions = unsettled[connection.id] else { return }
            func fix(_ pdu: inout ATTPDU) {
                if pdu.sender != .unknown { pdu.direction = role.direction(of: pdu.sender) }
            }
            for index in positions.att { fix(&trace.attPDUs[index]) }
            for index in positions.transactions {
                fix(&trace.attTransactions[index].request)
                if trace.attTransactions[index].response != nil { fix(&trace.attTransactions[index].response!) }
            }
            for index in positions.smp { trace.smpPDUs[index].direction = role.direction(of: trace.smpPDUs[index].sender) }
            for index in positions.signalling {
                trace.signalling[index].direction = role.direction(of: trace.signalling[index].sender)
            }
            for index in positions.channelSDUs {
                trace.channelSDUs[index].direction = role.direction(of: trace.channelSDUs[index].sender)
            }
        }
    }
}
