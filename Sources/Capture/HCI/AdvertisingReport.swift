import Bluetooth

/// One advertising report the controller gave the host (LE Meta subevents 0x02 legacy, 0x0D extended,
/// 0x0B directed), its data parsed. A scan response is a report of its own (``isScanResponse``).
public struct AdvertisingReport: Sendable, Hashable {
    public var frame: Int
    public var timestamp: Int64?
    public var controller: UInt16
    /// The advertiser; type nil for anonymous extended advertising.
    public var address: DeviceAddress
    public var subevent: Subevent
    /// The event type as reported: legacy 0x00–0x04, or the extended bit field.
    public var eventType: UInt16
    public var properties: AdvertisingEventProperties
    /// In dBm; nil when the controller had none (127).
    public var rssi: Int8?
    /// In dBm (extended reports); nil when not available.
    public var txPower: Int8?
    /// Extended reports: the advertising set ID; nil when not available (0xFF) or legacy.
    public var advertisingSID: UInt8?
    /// Extended reports: the PHYs the advertising came on (1 LE 1M, 2 LE 2M, 3 LE Coded; secondary 0: none, as
    /// for legacy PDUs); nil for legacy and directed reports.
    public var primaryPHY: UInt8?
    public var secondaryPHY: UInt8?
    /// Directed advertising: the address it was directed at.
    public var directAddress: DeviceAddress?
    /// The advertising data or scan response bytes (extended fragments joined).
    public var data: [UInt8]
    public var dataStatus: DataStatus
    /// How many reports the data came in (extended advertising splits long data).
    public var fragments: Int
    public var advertisingData: AdvertisingData
    /// Where AD parsing stopped early, if it did; the structures before it are in ``advertisingData``.
    public var dataProblem: AdvertisingData.ParseProblem?

    /// The LE Meta subevent the report came in.
    public enum Subevent: UInt8, Sendable, Hashable {
        case legacy = 0x02
        case directed = 0x0B
        case extended = 0x0D
    }

    /// Whether the data is whole.
    public enum DataStatus: Sendable, Hashable {
        case complete
        /// The controller gave up on the rest (extended status 0b10).
        case truncated
        /// Fragments announced more data that never came (the capture or the advertiser stopped).
        case incomplete
    }

    public var isScanResponse: Bool { properties.contains(.scanResponse) }

    /// The secondary channel of an extended (not legacy) advertisement, as a profile's `secondaryChannel` says it;
    /// nil for legacy advertising (or a PHY the report does not name).
    public var secondaryChannel: SecondaryChannel? {
        guard subevent == .extended, !properties.contains(.legacy) else { return nil }
        switch secondaryPHY {
        case 1: return .oneM
        case 2: return .twoM
        case 3: return .coded
        default: return nil
        }
    }
}

/// What kind of advertising a report came from: extended reports' event-type bits; legacy event types
/// are mapped onto them (ADV_IND connectable and scannable, SCAN_RSP a scan response, …) with ``legacy``.
public struct AdvertisingEventProperties: OptionSet, Sendable, Hashable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let connectable = AdvertisingEventProperties(rawValue: 1 << 0)
    public static let scannable = AdvertisingEventProperties(rawValue: 1 << 1)
    public static let directed = AdvertisingEventProperties(rawValue: 1 << 2)
    public static let scanResponse = AdvertisingEventProperties(rawValue: 1 << 3)
    public static let legacy = AdvertisingEventProperties(rawValue: 1 << 4)

    /// A legacy report's event type (0x00 ADV_IND … 0x04 SCAN_RSP).
    public init(legacyEventType type: UInt8) {
        switch type {
        case 0x00: self = [.connectable, .scannable, .legacy]
        case 0x01: self = [.connectable, .directed, .legacy]
        case 0x02: self = [.scannable, .legacy]
        case 0x03: self = [.legacy]
        case 0x04: self = [.scanResponse, .legacy]
        default: self = [.legacy]
        }
    }
}

/// An advertiser as one controller saw it, in memory bounded whatever the number of its reports (a long snoop log
/// with scanning on holds millions): its first reports, how many there were, its names, and the advertisement a phone
/// saw when it first connected to it.
public struct Advertiser: Sendable, Hashable {
    public var controller: UInt16
    public var address: DeviceAddress
    /// The first reports, in order (at most ``keptReports``).
    public var reports: [AdvertisingReport] = []
    /// Every report of this advertiser.
    public var reportCount = 0
    /// Reports that were scan responses.
    public var scanResponseCount = 0
    /// Whether any report was connectable or a scan response (what a device one could import sends).
    public var connectableOrScanned = false
    private var distinctNames = DistinctNames()
    /// The whole (complete) advertising data and scan response a phone saw last before it first connected to this
    /// address, failing that the first after: what a replica advertises.
    public private(set) var advertisingData: AdvertisingReport?
    public private(set) var scanResponse: AdvertisingReport?
    private var settledData = false
    private var settledResponse = false

    /// How many reports are kept whole.
    public static let keptReports = 16

    public init(controller: UInt16, address: DeviceAddress) {
        self.controller = controller
        self.address = address
    }

    /// Counts `report`, keeps it if it is among the first, and makes it the advertisement to use when it is the
    /// latest before a connection (`connected` false) or the first after one.
    public mutating func add(_ report: AdvertisingReport, connected: Bool) {
        reportCount += 1
        if report.isScanResponse { scanResponseCount += 1 }
        if report.properties.contains(.connectable) || report.isScanResponse { connectableOrScanned = true }
        if reports.count < Self.keptReports { reports.append(report) }
        if let name = report.advertisingData.localName { distinctNames.insert(name) }
        guard report.dataStatus == .complete else { return }
        // Before any connection to this address: the latest report. The first report after one settles it: the one
        // before the connection stays, or, when there was none, this one.
        if report.isScanResponse {
            if !settledResponse, !connected || scanResponse == nil { scanResponse = report }
            if connected { settledResponse = true }
        } else if !report.properties.contains(.directed) {
            if !settledData, !connected || advertisingData == nil { advertisingData = report }
            if connected { settledData = true }
        }
    }

    /// Local names in the data, distinct, in order of first appearance (at most ``DistinctNames/limit``).
    public var names: [String] { distinctNames.names }
}
