import Bluetooth

/// Where bluetoothd puts each field of an advertisement: the AD structures of the advertising data and of the scan
/// response, each with the profile field it comes from.
///
/// As bluetoothd 5.66–5.82 builds them (src/advertising.c, src/shared/ad.c): flags first in the advertising data
/// (the kernel adds them, as for an LE-only controller; a controller doing BR/EDR sends none for a set that is not
/// discoverable, and the budget keeps their 3 bytes either way), then service UUIDs, solicited UUIDs, manufacturer data, service data, appearance, TX
/// power and other AD structures; the local name in the scan response, except in a connectable extended
/// advertisement, which has no scan response (legacy PDUs alone are connectable and scannable at once) and carries
/// the name in its advertising data. The scan response fields follow the name. TX power included with
/// `includes: tx-power` is shown as the requested level (0 dBm without one): the controller fills in the real one.
public struct AdvertisementLayout: Sendable, Equatable {
    /// One AD structure and the field it comes from.
    public struct Item: Sendable, Equatable {
        public var field: String
        public var structure: ADStructure
        /// Bytes on air: length and type octets, then the data.
        public var bytes: Int { 2 + structure.data.count }
    }

    public var advertisingData: [Item] = []
    public var scanResponse: [Item] = []
    /// Whether bluetoothd sends a scan response at all (not for a connectable extended advertisement).
    public var hasScanResponse: Bool

    public init(_ advertisement: Advertisement) {
        let connectableExtended = advertisement.kind == .peripheral && advertisement.isExtended
        hasScanResponse = !connectableExtended
        advertisingData.append(
            Item(field: "flags", structure: ADStructure(type: .flags, data: [advertisement.discoverable == false ? 0x04 : 0x06])))
        advertisingData += Self.structures(
            serviceUUIDs: advertisement.serviceUUIDs, solicitUUIDs: advertisement.solicitUUIDs,
            manufacturerData: advertisement.manufacturerData, serviceData: advertisement.serviceData, data: [:], prefix: "")
        if connectableExtended, let name = advertisement.localName {
            advertisingData.append(Item(field: "localName", structure: ADStructure(type: .completeLocalName, data: Array(name.utf8))))
        }
        if advertisement.appearance != nil || advertisement.includes.contains("appearance") {
            let appearance = advertisement.appearance ?? 0
            advertisingData.append(
                Item(
                    field: "appearance",
                    structure: ADStructure(type: .appearance, data: [UInt8(appearance & 0xFF), UInt8(appearance >> 8)])))
        }
        if advertisement.includes.contains("tx-power") {
            advertisingData.append(
                Item(
                    field: "includes tx-power",
                    structure: ADStructure(type: .txPowerLevel, data: [UInt8(bitPattern: Int8(clamping: advertisement.txPower ?? 0))])))
        }
        advertisingData += Self.structures(
            serviceUUIDs: [], solicitUUIDs: [], manufacturerData: [:], serviceData: [:], data: advertisement.data, prefix: "")
        if !connectableExtended, let name = advertisement.localName {
            scanResponse.append(Item(field: "localName", structure: ADStructure(type: .completeLocalName, data: Array(name.utf8))))
        }
        let scan = advertisement.scanResponse
        scanResponse += Self.structures(
            serviceUUIDs: scan.serviceUUIDs, solicitUUIDs: scan.solicitUUIDs, manufacturerData: scan.manufacturerData,
            serviceData: scan.serviceData, data: scan.data, prefix: "scanResponse.")
    }

    /// The advertising data as AD structures.
    public var advertisingDataStructures: AdvertisingData { AdvertisingData(advertisingData.map(\.structure)) }
    /// The scan response as AD structures (empty when there is none).
    public var scanResponseStructures: AdvertisingData { AdvertisingData(hasScanResponse ? scanResponse.map(\.structure) : []) }

    /// A UUID as advertising data carries it: 2, 4 or 16 bytes, least significant first.
    static func advertised(_ uuid: BluetoothUUID) -> [UInt8] {
        uuid.advertisedSize == 4 ? uuid.littleEndian32 ?? uuid.littleEndian(compact: false) : uuid.littleEndian(compact: true)
    }

    private static func structures(
        serviceUUIDs: [BluetoothUUID], solicitUUIDs: [BluetoothUUID], manufacturerData: [UInt16: [UInt8]],
        serviceData: [BluetoothUUID: [UInt8]], data: [UInt8: [UInt8]], prefix: String
    ) -> [Item] {
        var items: [Item] = []
        func uuidLists(_ uuids: [BluetoothUUID], field: String, types: [Int: ADType]) {
            for size in [2, 4, 16] {
                let sized = uuids.filter { $0.advertisedSize == size }
                guard !sized.isEmpty, let type = types[size] else { continue }
                items.append(
                    Item(
                        field: "\(prefix)\(field) (\(sized.count) × \(size * 8)-bit)",
                        structure: ADStructure(type: type, data: sized.flatMap(advertised))))
            }
        }
        uuidLists(
            serviceUUIDs, field: "serviceUUIDs",
            types: [2: .completeServiceUUIDs16, 4: .completeServiceUUIDs32, 16: .completeServiceUUIDs128])
        uuidLists(
            solicitUUIDs, field: "solicitUUIDs",
            types: [2: .solicitedServiceUUIDs16, 4: .solicitedServiceUUIDs32, 16: .solicitedServiceUUIDs128])
        for (company, bytes) in manufacturerData.sorted(by: { $0.key < $1.key }) {
            items.append(
                Item(
                    field: "\(prefix)manufacturerData[\(company.hexLiteral(digits: 4))]",
                    structure: ADStructure(type: .manufacturerData, data: [UInt8(company & 0xFF), UInt8(company >> 8)] + bytes)))
        }
        for (uuid, bytes) in serviceData.sorted(by: { $0.key < $1.key }) {
            let type: ADType = uuid.advertisedSize == 2 ? .serviceData16 : uuid.advertisedSize == 4 ? .serviceData32 : .serviceData128
            items.append(
                Item(field: "\(prefix)serviceData[\(uuid)]", structure: ADStructure(type: type, data: advertised(uuid) + bytes)))
        }
        for (type, bytes) in data.sorted(by: { $0.key < $1.key }) {
            items.append(
                Item(
                    field: "\(prefix)data[\(type.hexLiteral(digits: 2))]", structure: ADStructure(type: ADType(rawValue: type), data: bytes)
                ))
        }
        return items
    }
}
