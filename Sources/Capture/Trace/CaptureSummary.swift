import Bluetooth

/// What `gattemu import --list` shows: per peer device its names, advertising, connections and ATT
/// operations, plus the capture's format, time span, problems and notes. Built while reading, in memory
/// that grows with the devices and connections it lists, never with the traffic.
public struct CaptureSummary: Sendable {
    public var format: CaptureFormat
    public var linktypes: [UInt32]
    /// Packet records in the file (the last frame number).
    public var frames: Int
    public var statistics: CaptureDecoder.Statistics
    public var controllers: [ControllerInfo] = []
    /// In order of first appearance.
    public var devices: [DeviceSummary] = []
    public var failedConnections = 0
    /// Every ATT PDU by opcode, all connections together.
    public var attOperations: [ATTOpcode: Int] = [:]
    public var smpMessages: [UInt8: Int] = [:]
    public var problems: [CaptureProblem] = []
    public var problemCount = 0
    /// Capture-wide notes, and the first 1000 naming one connection, handle or channel.
    public var notes: [CaptureNote] = []

    /// Microseconds from the first to the last timestamp.
    public var duration: Int64? {
        guard let first = statistics.firstTimestamp, let last = statistics.lastTimestamp else { return nil }
        return last - first
    }

    /// Reads a capture file, keeping only the summary; throws when nothing can be read.
    public static func read(path: String) throws(CaptureProblem) -> CaptureSummary {
        try CaptureSummary(reader: CaptureReader(path: path))
    }

    /// Reads a capture held in memory, keeping only the summary.
    public static func read(bytes: [UInt8]) throws(CaptureProblem) -> CaptureSummary {
        try CaptureSummary(reader: CaptureReader(bytes: bytes))
    }

    /// Decodes every record `reader` has left, keeping only the summary.
    public init(reader: CaptureReader) {
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
        builder.finish(&self)
        frames = reader.frames
        linktypes = reader.linktypes
        statistics = decoder.statistics
        problems = (reader.problems + problems).sorted { ($0.frame ?? 0, $0.offset ?? 0) < ($1.frame ?? 0, $1.offset ?? 0) }
        problemCount += reader.problemCount
    }

    /// Collects events into a summary.
    struct Builder {
        private var deviceIndex: [DeviceSummary.Identity: Int] = [:]
        /// Connection id → device index, and position in that device's connections.
        private var connectionDevice: [Int: Int] = [:]
        private var connectionPosition: [Int: Int] = [:]
        private var controllers: [UInt16: ControllerInfo] = [:]
        /// Resolvable private addresses seen as connection peers → the identity they resolved to.
        private var aliases: [DeviceAddress: DeviceAddress] = [:]
        /// Per connection: the value handle of the Device Name characteristic (0x2A00), once discovered.
        private var deviceNameHandles: [Int: AttributeHandle] = [:]

        private mutating func device(_ identity: DeviceSummary.Identity, frame: Int, in summary: inout CaptureSummary) -> Int {
            if let index = deviceIndex[identity] { return index }
            deviceIndex[identity] = summary.devices.count
            summary.devices.append(DeviceSummary(identity: identity, firstFrame: frame))
            return summary.devices.count - 1
        }

        mutating func add(_ event: CaptureEvent, to summary: inout CaptureSummary) {
            switch event {
            case .controller(let info):
                controllers[info.index] = info
            case .advertisingReport(let report):
                let index = device(.address(report.address), frame: report.frame, in: &summary)
                summary.devices[index].advertisingReports += report.fragments
                if report.isScanResponse { summary.devices[index].scanResponses += report.fragments }
                if let name = report.advertisingData.localName { summary.devices[index].addName(name) }
            case .connection(let connection):
                let identity: DeviceSummary.Identity =
                    connection.peer.map { .address($0) }
                    ?? .unknownPeer(controller: connection.controller, handle: connection.handle)
                let index = connectionDevice[connection.id] ?? device(identity, frame: connection.opened.frame, in: &summary)
                connectionDevice[connection.id] = index
                if let rpa = connection.peerResolvablePrivateAddress, let peer = connection.peer {
                    aliases[DeviceAddress(rpa, type: .random)] = peer
                }
                let entry = DeviceSummary.Connection(connection)
                if let position = connectionPosition[connection.id] {
                    summary.devices[index].connections[position] = entry
                } else {
                    connectionPosition[connection.id] = summary.devices[index].connections.count
                    summary.devices[index].connections.append(entry)
                }
            case .connectionFailed:
                summary.failedConnections += 1
            case .att(let pdu):
                summary.attOperations[pdu.opcode, default: 0] += 1
                if let index = connectionDevice[pdu.connection] { summary.devices[index].attOperations[pdu.opcode, default: 0] += 1 }
            case .attTransaction(let transaction):
                learnDeviceName(transaction, in: &summary)
            case .smp(let pdu):
                summary.smpMessages[pdu.message.code, default: 0] += 1
                if let index = connectionDevice[pdu.connection] { summary.devices[index].smpMessages += 1 }
            case .signalling, .channelSDU:
                break
            case .problem(let problem):
                summary.problemCount += 1
                if summary.problems.count < ProblemLog.limit { summary.problems.append(problem) }
            case .note(let note):
                if note.isCaptureWide || summary.notes.count < CaptureNote.limit { summary.notes.append(note) }
            }
        }

        /// The GAP Device Name: its value handle from characteristic discovery, then a read of it; or a
        /// Read By Type for 0x2A00.
        private mutating func learnDeviceName(_ transaction: ATTTransaction, in summary: inout CaptureSummary) {
            guard transaction.outcome == .answered, let response = transaction.response,
                transaction.request.opcode == .readByTypeRequest || transaction.request.opcode == .readRequest,
                let index = connectionDevice[transaction.connection]
            else { return }
            switch (transaction.request.message, response.message) {
            case (.readByTypeRequest(_, let type), .readByTypeResponse(let entries)) where type == .characteristic:
                for entry in entries {
                    if let declaration = entry.characteristicDeclaration, declaration.uuid == .deviceName {
                        deviceNameHandles[transaction.connection] = declaration.valueHandle
                    }
                }
            case (.readByTypeRequest(_, let type), .readByTypeResponse(let entries)) where type == .deviceName:
                if let value = entries.first?.value { summary.devices[index].setDeviceName(value) }
            case (.readRequest(let handle), .readResponse(let value)) where handle == deviceNameHandles[transaction.connection]:
                summary.devices[index].setDeviceName(value)
            default:
                break
            }
        }

        /// Folds devices seen under a resolvable private address into their identity.
        mutating func finish(_ summary: inout CaptureSummary) {
            summary.controllers = controllers.values.sorted { $0.index < $1.index }
            for (alias, identity) in aliases {
                guard let from = deviceIndex[.address(alias)], let to = deviceIndex[.address(identity)], from != to else { continue }
                summary.devices[to].merge(summary.devices[from])
                summary.devices[from].mergedInto = identity
            }
            summary.devices.removeAll { $0.mergedInto != nil }
        }
    }
}

/// One peer device of a capture: what it advertised, its connections and the ATT operations on them.
public struct DeviceSummary: Sendable, Hashable {
    /// Who the device is: its address, or only the handle its data came on.
    public enum Identity: Sendable, Hashable, CustomStringConvertible {
        case address(DeviceAddress)
        /// Only ACL data was seen (no connection event): the peer is unknown.
        case unknownPeer(controller: UInt16, handle: UInt16)

        public var description: String {
            switch self {
            case .address(let address): address.description
            case .unknownPeer(let controller, let handle): "unknown peer on handle 0x\(Hex.word(handle)) (controller \(controller))"
            }
        }
    }

    /// A connection to the device, in brief.
    public struct Connection: Sendable, Hashable {
        public var id: Int
        public var handle: UInt16
        public var link: LinkType
        public var localRole: ConnectionRole?
        public var roleInferred: Bool
        public var openedFrame: Int
        public var closedFrame: Int?
        public var encrypted: Bool

        init(_ connection: CaptureConnection) {
            id = connection.id
            handle = connection.handle
            link = connection.link
            localRole = connection.localRole
            roleInferred = connection.roleInferred
            openedFrame = connection.opened.frame
            closedFrame = connection.closed?.frame
            encrypted = connection.encryption.contains { $0.status == .success && ($0.enabled ?? 1) != 0 }
        }
    }

    public var identity: Identity
    public var firstFrame: Int
    /// Advertised local names, then the GAP Device Name when read over ATT; distinct, in order (at most
    /// ``DistinctNames/limit``: a device that changes its name in every advertisement stays cheap).
    public var names: [String] { distinctNames.names }
    private var distinctNames = DistinctNames()
    /// The GAP Device Name (0x2A00) as read over ATT.
    public var deviceName: String?
    /// Reports (fragments counted one each), scan responses included.
    public var advertisingReports = 0
    public var scanResponses = 0
    public var connections: [Connection] = []
    public var attOperations: [ATTOpcode: Int] = [:]
    public var smpMessages = 0
    var mergedInto: DeviceAddress?

    init(identity: Identity, firstFrame: Int) {
        self.identity = identity
        self.firstFrame = firstFrame
    }

    public var address: DeviceAddress? {
        if case .address(let address) = identity { return address }
        return nil
    }

    /// Local roles over its connections.
    public var roles: Set<ConnectionRole> { Set(connections.compactMap(\.localRole)) }

    public var attPDUs: Int { attOperations.values.reduce(0, +) }

    /// Adds a name, without the NUL and space padding some devices put after it.
    mutating func addName(_ name: String) {
        guard distinctNames.names.count < DistinctNames.limit else { return }
        var name = Substring(name)
        while let last = name.last, last == "\0" || last == " " { name = name.dropLast() }
        if !name.isEmpty { distinctNames.insert(String(name)) }
    }

    mutating func setDeviceName(_ value: [UInt8]) {
        let name = String(decoding: value.prefix(248).prefix { $0 != 0 }, as: UTF8.self)
        guard !name.isEmpty else { return }
        deviceName = name
        addName(name)
    }

    mutating func merge(_ other: DeviceSummary) {
        for name in other.names { addName(name) }
        if deviceName == nil { deviceName = other.deviceName }
        advertisingReports += other.advertisingReports
        scanResponses += other.scanResponses
        connections = (connections + other.connections).sorted { $0.id < $1.id }
        attOperations.merge(other.attOperations, uniquingKeysWith: +)
        smpMessages += other.smpMessages
        firstFrame = min(firstFrame, other.firstFrame)
    }
}
