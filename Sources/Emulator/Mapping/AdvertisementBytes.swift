import BlueZ
import Bluetooth
import Profile

/// The legacy advertising data and scan response BlueZ builds for an advertisement, as bytes: flags and
/// everything but the name in the advertising data, the local name in the scan response (as
/// ``AdvertisementBudget`` counts them). TX power included with `includes: tx-power` is shown as 0 dBm:
/// the controller fills in the real level.
public enum AdvertisementBytes {
    public static func build(_ advertisement: Advertisement) -> (advertisingData: AdvertisingData, scanResponse: AdvertisingData) {
        var data: [ADStructure] = [ADStructure(type: .flags, data: [advertisement.discoverable == false ? 0x04 : 0x06])]
        func uuidLists(_ uuids: [BluetoothUUID], types: [Int: ADType]) {
            for size in [2, 4, 16] {
                let sized = uuids.filter { $0.advertisedSize == size }
                guard !sized.isEmpty, let type = types[size] else { continue }
                data.append(ADStructure(type: type, data: sized.flatMap { $0.littleEndian(compact: true) }))
            }
        }
        uuidLists(
            advertisement.serviceUUIDs, types: [2: .completeServiceUUIDs16, 4: .completeServiceUUIDs32, 16: .completeServiceUUIDs128])
        uuidLists(
            advertisement.solicitUUIDs, types: [2: .solicitedServiceUUIDs16, 4: .solicitedServiceUUIDs32, 16: .solicitedServiceUUIDs128])
        for (company, bytes) in advertisement.manufacturerData.sorted(by: { $0.key < $1.key }) {
            data.append(ADStructure(type: .manufacturerData, data: [UInt8(company & 0xFF), UInt8(company >> 8)] + bytes))
        }
        for (uuid, bytes) in advertisement.serviceData.sorted(by: { $0.key < $1.key }) {
            let type: ADType = uuid.advertisedSize == 2 ? .serviceData16 : uuid.advertisedSize == 4 ? .serviceData32 : .serviceData128
            data.append(ADStructure(type: type, data: uuid.littleEndian(compact: true) + bytes))
        }
        if advertisement.appearance != nil || advertisement.includes.contains("appearance") {
            let appearance = advertisement.appearance ?? 0
            data.append(ADStructure(type: .appearance, data: [UInt8(appearance & 0xFF), UInt8(appearance >> 8)]))
        }
        if advertisement.includes.contains("tx-power") {
            data.append(ADStructure(type: .txPowerLevel, data: [UInt8(bitPattern: Int8(clamping: advertisement.txPower ?? 0))]))
        }
        for (type, bytes) in advertisement.data.sorted(by: { $0.key < $1.key }) {
            data.append(ADStructure(type: ADType(rawValue: type), data: bytes))
        }
        var scan: [ADStructure] = []
        if let name = advertisement.localName { scan.append(ADStructure(type: .completeLocalName, data: Array(name.utf8))) }
        return (AdvertisingData(data), AdvertisingData(scan))
    }
}
