import Bluetooth
import DBus

/// A remote device's `org.bluez.Device1` properties, typed and bounded: what BlueZ knows of its
/// advertisement (merged with its scan response) and of the link.
///
/// Every value comes from the bus and is checked where it enters: strings are cut to their Bluetooth
/// maximum, lists and dictionaries to a few dozen entries, byte strings to what one AD structure can hold;
/// values of the wrong type are ignored. What was cut or ignored is said in ``discarded``.
public struct DeviceProperties: Sendable, Equatable {
    public var path: DBusObjectPath
    public var address: BluetoothAddress?
    public var addressType: AddressType?
    /// The advertised name (or the GAP name BlueZ read after connecting).
    public var name: String?
    public var alias: String?
    public var appearance: UInt16?
    /// Service UUIDs advertised — and, once connected, those BlueZ found in the GATT table.
    public var serviceUUIDs: [BluetoothUUID] = []
    public var manufacturerData: [UInt16: [UInt8]] = [:]
    public var serviceData: [BluetoothUUID: [UInt8]] = [:]
    /// The advertised TX power level in dBm (only while discovering).
    public var txPower: Int16?
    public var rssi: Int16?
    /// The advertising data's flags field (`AdvertisingFlags`; experimental in BlueZ 5.66), when offered.
    public var advertisingFlags: [UInt8]?
    /// `AdvertisingData`: the AD structures of types BlueZ does not decode itself, as received; nil when
    /// BlueZ does not offer the property (5.66 without `-E`).
    public var advertisingData: [ADStructure]?
    public var connected = false
    public var servicesResolved = false
    public var paired = false
    public var bonded = false
    public var trusted = false
    /// What was ignored or cut, one line each.
    public var discarded: [String] = []

    /// Bounds on what one device may bring.
    public enum Limits {
        public static let listEntries = 32
        public static let uuids = 64
        /// One AD structure's data: 255 length minus the type byte.
        public static let structureBytes = 254
        public static let nameBytes = 248
        public static let discardedNotes = 16
    }

    public init(path: DBusObjectPath, properties: [String: DBusValue] = [:]) {
        self.path = path
        address = BlueZDevicePath.address(of: path)
        apply(changed: properties, invalidated: [])
    }

    /// Applies a `PropertiesChanged` (or the properties of `InterfacesAdded`).
    public mutating func apply(changed: [String: DBusValue], invalidated: [String]) {
        for name in invalidated { clear(name) }
        for (key, value) in changed { set(key, value.unwrappingVariants) }
    }

    private mutating func clear(_ property: String) {
        switch property {
        case "Name": name = nil
        case "Alias": alias = nil
        case "Appearance": appearance = nil
        case "UUIDs": serviceUUIDs = []
        case "ManufacturerData": manufacturerData = [:]
        case "ServiceData": serviceData = [:]
        case "TxPower": txPower = nil
        case "RSSI": rssi = nil
        case "AdvertisingFlags": advertisingFlags = nil
        case "AdvertisingData": advertisingData = nil
        default: break
        }
    }

    private mutating func set(_ property: String, _ value: DBusValue) {
        switch property {
        case "Address":
            if let text = value.string, let parsed = BluetoothAddress(text) { address = parsed } else { note("Address is not an address") }
        case "AddressType":
            switch value.string {
            case "public": addressType = .public
            case "random": addressType = .random
            default: note("AddressType is neither public nor random")
            }
        case "Name": name = text(value, property)
        case "Alias": alias = text(value, property)
        case "Appearance": appearance = value.integer.flatMap { UInt16(exactly: $0) }
        case "UUIDs":
            guard let elements = value.arrayElements else { return note("UUIDs is not a list") }
            if elements.count > Limits.uuids { note("UUIDs: \(elements.count) entries, the first \(Limits.uuids) kept") }
            var uuids: [BluetoothUUID] = []
            for element in elements.prefix(Limits.uuids) {
                guard let uuid = element.string.flatMap(BluetoothUUID.init) else {
                    note("UUIDs: an entry that is not a UUID ignored")
                    continue
                }
                if !uuids.contains(uuid) { uuids.append(uuid) }
            }
            serviceUUIDs = uuids
        case "ManufacturerData":
            var data: [UInt16: [UInt8]] = [:]
            for (key, bytes) in entries(value, property, dataLimit: Limits.structureBytes - 2) {
                guard let company = key.integer.flatMap({ UInt16(exactly: $0) }) else { continue }
                data[company] = bytes
            }
            manufacturerData = data
        case "ServiceData":
            var data: [BluetoothUUID: [UInt8]] = [:]
            for (key, bytes) in entries(value, property, dataLimit: Limits.structureBytes - 2) {
                guard let uuid = key.string.flatMap(BluetoothUUID.init) else {
                    note("ServiceData: a key that is not a UUID ignored")
                    continue
                }
                data[uuid] = bytes
            }
            serviceData = data
        case "TxPower": txPower = value.integer.flatMap { Int16(exactly: $0) }
        case "RSSI": rssi = value.integer.flatMap { Int16(exactly: $0) }
        case "AdvertisingFlags":
            guard let bytes = value.bytes else { return note("AdvertisingFlags is not bytes") }
            advertisingFlags = Array(bytes.prefix(Limits.structureBytes))
        case "AdvertisingData":
            var structures: [ADStructure] = []
            for (key, bytes) in entries(value, property, dataLimit: Limits.structureBytes) {
                guard let type = key.integer.flatMap({ UInt8(exactly: $0) }) else { continue }
                structures.append(ADStructure(type: ADType(rawValue: type), data: bytes))
            }
            advertisingData = structures.sorted { $0.type.rawValue < $1.type.rawValue }
        case "Connected": connected = value.boolean ?? connected
        case "ServicesResolved": servicesResolved = value.boolean ?? servicesResolved
        case "Paired": paired = value.boolean ?? paired
        case "Bonded": bonded = value.boolean ?? bonded
        case "Trusted": trusted = value.boolean ?? trusted
        default: break
        }
    }

    private mutating func text(_ value: DBusValue, _ property: String) -> String? {
        guard let text = value.string else {
            note("\(property) is not a string")
            return nil
        }
        if text.utf8.count > Limits.nameBytes { note("\(property): \(text.utf8.count) bytes, cut to \(Limits.nameBytes)") }
        return TextSafety.bounded(text, maximumBytes: Limits.nameBytes)
    }

    /// The entries of a dictionary whose values are byte strings, bounded in count and length.
    private mutating func entries(_ value: DBusValue, _ property: String, dataLimit: Int) -> [(DBusValue, [UInt8])] {
        guard case .dictionary(_, _, let entries) = value else {
            note("\(property) is not a dictionary")
            return []
        }
        if entries.count > Limits.listEntries { note("\(property): \(entries.count) entries, the first \(Limits.listEntries) kept") }
        var result: [(DBusValue, [UInt8])] = []
        for entry in entries.prefix(Limits.listEntries) {
            guard let bytes = entry.value.unwrappingVariants.bytes else {
                note("\(property): a value that is not bytes ignored")
                continue
            }
            if bytes.count > dataLimit { note("\(property): \(bytes.count) bytes, cut to \(dataLimit)") }
            result.append((entry.key, Array(bytes.prefix(dataLimit))))
        }
        return result
    }

    private mutating func note(_ line: String) {
        guard discarded.count < Limits.discardedNotes, !discarded.contains(line) else { return }
        discarded.append(line)
    }

    /// Whether a `PropertiesChanged` with these keys means the device was heard advertising.
    static func isAdvertisement(_ keys: some Sequence<String>) -> Bool {
        keys.contains {
            ["RSSI", "TxPower", "ManufacturerData", "ServiceData", "AdvertisingData", "AdvertisingFlags", "Name", "UUIDs"].contains($0)
        }
    }
}
