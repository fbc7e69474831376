import Bluetooth
import DBus

/// The contents of one LE advertisement (`org.bluez.LEAdvertisement1`), as plain values.
public struct Advertisement: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case peripheral
        case broadcast
    }

    public var kind: Kind = .peripheral
    /// Goes in the scan response (BlueZ 5.66 puts the local name there).
    public var localName: String?
    public var serviceUUIDs: [BluetoothUUID] = []
    public var solicitUUIDs: [BluetoothUUID] = []
    public var manufacturerData: [UInt16: [UInt8]] = [:]
    public var serviceData: [BluetoothUUID: [UInt8]] = [:]
    public var appearance: UInt16?
    /// Requested TX power in dBm (experimental in 5.66).
    public var txPower: Int16?
    /// `tx-power`, `appearance`, `local-name`, … (see `Adapter.supportedIncludes`).
    public var includes: [String] = []
    public var discoverable: Bool?
    /// Milliseconds; experimental in 5.66 (bluetoothd needs `-E`).
    public var minInterval: UInt32?
    public var maxInterval: UInt32?
    /// Seconds each rotation slot lasts, and seconds until the advertisement is removed.
    public var duration: UInt16?
    public var timeout: UInt16?
    /// Raw AD structures by AD type.
    public var data: [UInt8: [UInt8]] = [:]
    /// Extended advertising on this secondary PHY (`SecondaryChannel`); nil: legacy advertising.
    public var secondaryChannel: SecondaryChannel?
    /// What goes in the scan response beside the name (`ScanResponse*`: bluetoothd 5.80 and later, with `-E`).
    public var scanResponse = ScanResponseData()

    /// Whether it goes out as extended advertising (Bluetooth 5): with a secondary channel.
    public var isExtended: Bool { secondaryChannel != nil }

    public init() {}

    /// Every property of `LEAdvertisement1` gattemu may export, with its D-Bus signature.
    static let propertySignatures: [(name: String, signature: DBusSignature)] = [
        ("Type", .string), ("LocalName", .string), ("ServiceUUIDs", "as"), ("SolicitUUIDs", "as"),
        ("ManufacturerData", "a{qv}"), ("ServiceData", "a{sv}"), ("Appearance", .uint16), ("TxPower", .int16),
        ("Includes", "as"), ("Discoverable", .boolean), ("MinInterval", .uint32), ("MaxInterval", .uint32),
        ("Duration", .uint16), ("Timeout", .uint16), ("Data", "a{yv}"), ("SecondaryChannel", .string),
        ("ScanResponseServiceUUIDs", "as"), ("ScanResponseSolicitUUIDs", "as"), ("ScanResponseManufacturerData", "a{qv}"),
        ("ScanResponseServiceData", "a{sv}"), ("ScanResponseData", "a{yv}"),
    ]

    /// The D-Bus properties of the advertisement object.
    var properties: [String: DBusValue] {
        var properties: [String: DBusValue] = ["Type": .string(kind.rawValue)]
        if let localName { properties["LocalName"] = .string(localName) }
        if !serviceUUIDs.isEmpty { properties["ServiceUUIDs"] = .strings(serviceUUIDs.map(\.description)) }
        if !solicitUUIDs.isEmpty { properties["SolicitUUIDs"] = .strings(solicitUUIDs.map(\.description)) }
        if !manufacturerData.isEmpty {
            properties["ManufacturerData"] = .variantBytesDictionary(manufacturerData, key: .uint16, DBusValue.uint16)
        }
        if !serviceData.isEmpty {
            properties["ServiceData"] = .variantBytesDictionary(
                Dictionary(uniqueKeysWithValues: serviceData.map { ($0.key.description, $0.value) }), key: .string, DBusValue.string)
        }
        if let appearance { properties["Appearance"] = .uint16(appearance) }
        if let txPower { properties["TxPower"] = .int16(txPower) }
        if !includes.isEmpty { properties["Includes"] = .strings(includes) }
        if let discoverable { properties["Discoverable"] = .boolean(discoverable) }
        if let minInterval { properties["MinInterval"] = .uint32(minInterval) }
        if let maxInterval { properties["MaxInterval"] = .uint32(maxInterval) }
        if let duration { properties["Duration"] = .uint16(duration) }
        if let timeout { properties["Timeout"] = .uint16(timeout) }
        if !data.isEmpty {
            properties["Data"] = .variantBytesDictionary(data, key: .byte, DBusValue.byte)
        }
        if let secondaryChannel { properties["SecondaryChannel"] = .string(secondaryChannel.rawValue) }
        let scan = scanResponse
        if !scan.serviceUUIDs.isEmpty { properties["ScanResponseServiceUUIDs"] = .strings(scan.serviceUUIDs.map(\.description)) }
        if !scan.solicitUUIDs.isEmpty { properties["ScanResponseSolicitUUIDs"] = .strings(scan.solicitUUIDs.map(\.description)) }
        if !scan.manufacturerData.isEmpty {
            properties["ScanResponseManufacturerData"] = .variantBytesDictionary(scan.manufacturerData, key: .uint16, DBusValue.uint16)
        }
        if !scan.serviceData.isEmpty {
            properties["ScanResponseServiceData"] = .variantBytesDictionary(
                Dictionary(uniqueKeysWithValues: scan.serviceData.map { ($0.key.description, $0.value) }), key: .string, DBusValue.string)
        }
        if !scan.data.isEmpty {
            properties["ScanResponseData"] = .variantBytesDictionary(scan.data, key: .byte, DBusValue.byte)
        }
        return properties
    }
}
