import Bluetooth

/// Advertising: whether it is on, the variant, and each advertisement's data as fields and as bytes.
public struct AdvertisingInfo: Codable, Sendable, Equatable {
    /// Whether advertisements are registered with bluetoothd right now.
    public var advertised: Bool
    /// Whether the profile wants to advertise (false after a stopAdvertising action).
    public var wanted: Bool
    /// The active variant; nil: the base advertisement.
    public var variant: String?
    public var variants: [String]
    /// One line per advertisement, as the event log describes it.
    public var advertisements: [String]
    /// Each advertisement (of the active variant) decoded and as legacy advertising bytes.
    public var data: [AdvertisementInfo]

    public init(advertised: Bool, wanted: Bool, variant: String?, variants: [String], advertisements: [String], data: [AdvertisementInfo]) {
        self.advertised = advertised
        self.wanted = wanted
        self.variant = variant
        self.variants = variants
        self.advertisements = advertisements
        self.data = data
    }

    static var schema: Schema {
        .object([
            required("advertised", .boolean),
            required("wanted", .boolean),
            optional("variant", .string),
            required("variants", .array(.string)),
            required("advertisements", .array(.string)),
            required("data", .array(AdvertisementInfo.schema)),
        ])
    }

    static var examples: [AdvertisingInfo] {
        [
            AdvertisingInfo(
                advertised: true, wanted: true, variant: "touched", variants: ["touched"], advertisements: ["name \"ETHS\""],
                data: [
                    AdvertisementInfo(
                        localName: "ETHS", serviceUUIDs: ["0000180f-0000-1000-8000-00805f9b34fb"], solicitUUIDs: [],
                        manufacturerData: [CompanyData(company: 0xFFFF, hex: "40")], serviceData: [ServiceData(uuid: "180f", hex: "64")],
                        appearance: 0, txPower: 4, otherStructures: [ADField(type: 0x1A, name: "advertising interval", hex: "a000")],
                        advertisingData: ADPayload(
                            hex: "020106031aa000",
                            structures: [
                                ADField(type: 1, name: "flags", hex: "06"), ADField(type: 0x1A, name: "advertising interval", hex: "a000"),
                            ]),
                        scanResponse: ADPayload(
                            hex: "050945544853", structures: [ADField(type: 9, name: "complete local name", hex: "45544853")]),
                        secondaryChannel: "Coded", type: "broadcast")
                ])
        ]
    }
}

/// One advertisement's fields, and the advertising data and scan response BlueZ builds from them.
public struct AdvertisementInfo: Codable, Sendable, Equatable {
    public var localName: String?
    public var serviceUUIDs: [String]
    public var solicitUUIDs: [String]
    public var manufacturerData: [CompanyData]
    public var serviceData: [ServiceData]
    public var appearance: Int?
    public var txPower: Int?
    /// Other AD structures the profile lists under `data` (AD type → bytes), in type order.
    public var otherStructures: [ADField]
    /// Flags and everything but the name (legacy: 31 bytes at most; extended: the adapter's MaxAdvLen, with the name
    /// when connectable).
    public var advertisingData: ADPayload
    /// The local name (BlueZ 5.66 puts it here; 31 bytes at most) and the scan response fields; empty for a
    /// connectable extended advertisement, which has no scan response.
    public var scanResponse: ADPayload
    /// Extended advertising on this secondary PHY (`1M`, `2M`, `Coded`); absent: legacy advertising.
    public var secondaryChannel: String?
    /// `peripheral` (connectable) or `broadcast`.
    public var type: String?

    public init(
        localName: String?, serviceUUIDs: [String], solicitUUIDs: [String], manufacturerData: [CompanyData], serviceData: [ServiceData],
        appearance: Int?, txPower: Int?, otherStructures: [ADField] = [], advertisingData: ADPayload, scanResponse: ADPayload,
        secondaryChannel: String? = nil, type: String? = nil
    ) {
        self.localName = localName
        self.serviceUUIDs = serviceUUIDs
        self.solicitUUIDs = solicitUUIDs
        self.manufacturerData = manufacturerData
        self.serviceData = serviceData
        self.appearance = appearance
        self.txPower = txPower
        self.otherStructures = otherStructures
        self.advertisingData = advertisingData
        self.scanResponse = scanResponse
        self.secondaryChannel = secondaryChannel
        self.type = type
    }

    static var schema: Schema {
        .object([
            optional("localName", .string),
            required("serviceUUIDs", .array(.string)),
            required("solicitUUIDs", .array(.string)),
            required(
                "manufacturerData", .array(.object([required("company", .integer(minimum: 0, maximum: 0xFFFF)), required("hex", .string)]))),
            required("serviceData", .array(.object([required("uuid", .string), required("hex", .string)]))),
            optional("appearance", .integer(minimum: 0, maximum: 0xFFFF)),
            optional("txPower", .integer(minimum: -127, maximum: 127)),
            required("otherStructures", .array(ADField.schema)),
            required("advertisingData", ADPayload.schema),
            required("scanResponse", ADPayload.schema),
            optional("secondaryChannel", .string(enumeration: SecondaryChannel.allCases.map(\.rawValue))),
            optional("type", .string(enumeration: ["peripheral", "broadcast"])),
        ])
    }
}

/// Manufacturer data: company identifier and the bytes after it.
public struct CompanyData: Codable, Sendable, Equatable {
    public var company: Int
    public var hex: String
    public init(company: Int, hex: String) {
        self.company = company
        self.hex = hex
    }
}

/// Service data: service UUID and the bytes after it.
public struct ServiceData: Codable, Sendable, Equatable {
    public var uuid: String
    public var hex: String
    public init(uuid: String, hex: String) {
        self.uuid = uuid
        self.hex = hex
    }
}

/// Advertising data or a scan response: the bytes, their AD structures, and the budget (31 bytes for legacy
/// advertising, the adapter's limit for extended).
public struct ADPayload: Codable, Sendable, Equatable {
    public var hex: String
    public var length: Int
    public var limit: Int
    public var fits: Bool
    public var structures: [ADField]

    public init(hex: String, structures: [ADField], limit: Int = 31) {
        self.hex = hex
        self.length = hex.utf8.count / 2
        self.limit = limit
        self.fits = length <= limit
        self.structures = structures
    }

    static var schema: Schema {
        .object([
            required("hex", .string),
            required("length", .integer(minimum: 0)),
            required("limit", .integer(minimum: 0)),
            required("fits", .boolean),
            required("structures", .array(ADField.schema)),
        ])
    }
}

/// One AD structure: type, its name, the data (hex).
public struct ADField: Codable, Sendable, Equatable {
    public var type: Int
    public var name: String
    public var hex: String
    public init(type: Int, name: String, hex: String) {
        self.type = type
        self.name = name
        self.hex = hex
    }

    static var schema: Schema {
        .object([required("type", .integer(minimum: 0, maximum: 255)), required("name", .string), required("hex", .string)])
    }
}
