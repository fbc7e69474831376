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

    public init() {}

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
        return properties
    }
}
