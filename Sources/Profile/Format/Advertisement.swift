import Bluetooth

/// BlueZ LEAdvertisement1 `Type`.
public enum AdvertisementType: String, Sendable, Equatable, CaseIterable {
    case peripheral, broadcast
}

/// The scan response fields (BlueZ's `ScanResponse*` properties, bluetoothd 5.80 and later with `-E`): what a
/// scanner gets when it asks, beside the advertising data.
public struct ScanResponseFields: Sendable, Equatable {
    public var serviceUUIDs: [BluetoothUUID]?
    public var solicitUUIDs: [BluetoothUUID]?
    public var manufacturerData: [UInt16: Template]?
    public var serviceData: [BluetoothUUID: Template]?
    public var data: [UInt8: Template]?

    public init() {}
}

/// Advertisement fields as written in a profile; every field optional so a variant can override a subset.
public struct AdvertisementFields: Sendable, Equatable {
    public var type: AdvertisementType?
    public var localName: Template?
    public var serviceUUIDs: [BluetoothUUID]?
    public var solicitUUIDs: [BluetoothUUID]?
    /// Company id → data after the company id.
    public var manufacturerData: [UInt16: Template]?
    /// Service UUID → data.
    public var serviceData: [BluetoothUUID: Template]?
    public var appearance: UInt16?
    public var txPower: Int?
    /// BlueZ `Includes` values, e.g. `tx-power`, `appearance`, `local-name`.
    public var includes: [String]?
    public var discoverable: Bool?
    /// Milliseconds.
    public var minInterval: Int?
    public var maxInterval: Int?
    /// Seconds, as BlueZ has them.
    public var duration: Int?
    public var timeout: Int?
    /// Other AD structures: AD type → the bytes after the type (BlueZ `Data`).
    public var data: [UInt8: Template]?
    /// Extended advertising on this secondary PHY; nil: legacy advertising.
    public var secondaryChannel: SecondaryChannel?
    public var scanResponse: ScanResponseFields?

    public init() {}

    /// These fields with every field `other` sets replacing ours.
    public func overridden(by other: AdvertisementFields) -> AdvertisementFields {
        var result = self
        result.type = other.type ?? type
        result.localName = other.localName ?? localName
        result.serviceUUIDs = other.serviceUUIDs ?? serviceUUIDs
        result.solicitUUIDs = other.solicitUUIDs ?? solicitUUIDs
        result.manufacturerData = other.manufacturerData ?? manufacturerData
        result.serviceData = other.serviceData ?? serviceData
        result.appearance = other.appearance ?? appearance
        result.txPower = other.txPower ?? txPower
        result.includes = other.includes ?? includes
        result.discoverable = other.discoverable ?? discoverable
        result.minInterval = other.minInterval ?? minInterval
        result.maxInterval = other.maxInterval ?? maxInterval
        result.duration = other.duration ?? duration
        result.timeout = other.timeout ?? timeout
        result.data = other.data ?? data
        result.secondaryChannel = other.secondaryChannel ?? secondaryChannel
        result.scanResponse = other.scanResponse ?? scanResponse
        return result
    }
}

/// One advertisement of a profile with its named variants (e.g. `touched`).
public struct AdvertisementDefinition: Sendable, Equatable {
    public var id: String?
    public var fields: AdvertisementFields
    public var variants: [String: AdvertisementFields]
    public var path: String
}

/// An advertisement resolved to concrete values, ready for LEAdvertisement1.
///
/// Templates have been rendered for one adapter and state.
public struct AdvertisementSpec: Sendable, Equatable {
    public var type: AdvertisementType = .peripheral
    public var localName: String?
    public var serviceUUIDs: [BluetoothUUID] = []
    public var solicitUUIDs: [BluetoothUUID] = []
    public var manufacturerData: [UInt16: [UInt8]] = [:]
    public var serviceData: [BluetoothUUID: [UInt8]] = [:]
    public var appearance: UInt16?
    public var txPower: Int?
    public var includes: [String] = []
    public var discoverable: Bool?
    public var minInterval: Int?
    public var maxInterval: Int?
    public var duration: Int?
    public var timeout: Int?
    /// Other AD structures by AD type.
    public var data: [UInt8: [UInt8]] = [:]
    public var secondaryChannel: SecondaryChannel?
    public var scanResponse = ScanResponseData()

    public init() {}
}

/// The `device` section.
public struct DeviceDefinition: Sendable, Equatable {
    /// Text template, e.g. `NOKE{hardwareCode}_{address}`.
    public var name: Template?
    public var appearance: UInt16?
}
