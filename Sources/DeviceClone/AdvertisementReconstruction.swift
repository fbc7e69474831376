import BlueZ
import Bluetooth

/// The advertising data and scan response of a device, rebuilt from what BlueZ tells a central about them.
///
/// BlueZ never hands a central the raw advertisement: `Device1` has the fields it decodes (name, UUIDs,
/// manufacturer and service data, appearance, TX power), with advertising data and scan response merged;
/// `AdvertisingFlags` the flags; and `AdvertisingData` (experimental in 5.66, so only with `bluetoothd -E`)
/// only the AD structures of types it does *not* decode, as received. So the structures are always rebuilt
/// from the typed properties, those of other types are taken from `AdvertisingData` where it is offered, and
/// the split is made as BlueZ peripherals make it: the name in the scan response, the rest in the advertising
/// data. ``notes`` says what this could not know.
struct AdvertisementReconstruction {
    var advertisingData = AdvertisingData()
    var scanResponse = AdvertisingData()
    var notes: [String] = []
    var provenance: String

    init(_ device: DeviceProperties, adapter: String) {
        provenance = "Device1 properties during the scan on \(adapter) (advertising data and scan response as BlueZ merged them)"
        var structures: [ADStructure] = []
        if let flags = device.advertisingFlags, !flags.isEmpty {
            structures.append(ADStructure(type: .flags, data: Array(flags.prefix(1))))
        } else {
            notes.append("advertisement: flags unknown (AdvertisingFlags is not offered: experimental in BlueZ 5.66, bluetoothd -E)")
        }
        let uuids = device.serviceUUIDs
        for (type, size) in [(ADType.completeServiceUUIDs16, 2), (.completeServiceUUIDs32, 4), (.completeServiceUUIDs128, 16)] {
            let group = uuids.filter { $0.advertisedSize == size }
            guard !group.isEmpty else { continue }
            structures.append(ADStructure(type: type, data: group.flatMap { Self.wire($0) }))
        }
        if !uuids.isEmpty {
            notes.append(
                "advertisement: service UUIDs written as complete lists in their shortest form (BlueZ does not say how they were sent)")
        }
        for (uuid, data) in device.serviceData.sorted(by: { $0.key < $1.key }) {
            let type: ADType = uuid.advertisedSize == 2 ? .serviceData16 : uuid.advertisedSize == 4 ? .serviceData32 : .serviceData128
            structures.append(ADStructure(type: type, data: Self.wire(uuid) + data))
        }
        for (company, data) in device.manufacturerData.sorted(by: { $0.key < $1.key }) {
            structures.append(ADStructure(type: .manufacturerData, data: [UInt8(company & 0xFF), UInt8(company >> 8)] + data))
        }
        if let appearance = device.appearance {
            structures.append(ADStructure(type: .appearance, data: [UInt8(appearance & 0xFF), UInt8(appearance >> 8)]))
        }
        if let power = device.txPower, let level = Int8(exactly: power) {
            structures.append(ADStructure(type: .txPowerLevel, data: [UInt8(bitPattern: level)]))
        }
        if let others = device.advertisingData {
            let raw = others.filter { !Self.decodedByBlueZ.contains($0.type.rawValue) }
            if raw.count < others.count {
                notes.append(
                    "advertisement: \(others.count - raw.count) AD structure\(others.count - raw.count == 1 ? "" : "s") in AdvertisingData of types BlueZ decodes itself ignored (it never puts those there)"
                )
            }
            structures += raw
            if !raw.isEmpty {
                notes.append(
                    "advertisement: \(raw.count) AD structure\(raw.count == 1 ? "" : "s") of types BlueZ does not decode (\(raw.map { "0x" + String($0.type.rawValue, radix: 16, uppercase: true) }.joined(separator: ", "))) taken as received from AdvertisingData"
                )
            }
            provenance += "; other AD types from AdvertisingData"
        } else {
            notes.append(
                "advertisement: rebuilt from Device1's typed properties only; AD types BlueZ does not decode are missing (AdvertisingData is not offered: BlueZ 5.66 without bluetoothd -E)"
            )
        }
        advertisingData = AdvertisingData(structures)
        if let name = device.name {
            // Legacy advertising carries 31 bytes: a longer name (BlueZ's Name can be the GAP name, up to 248
            // bytes) is advertised shortened, as the device must have done.
            let shortened = AdvertisingData.scanResponseName(name)
            if shortened != name {
                scanResponse = AdvertisingData([ADStructure(type: .shortenedLocalName, data: Array(shortened.utf8))])
                notes.append(
                    "advertisement: the name (\(name.utf8.count) bytes) advertised shortened to \(shortened.utf8.count) bytes, the most a scan response holds"
                )
            } else {
                scanResponse = AdvertisingData([ADStructure(type: .completeLocalName, data: Array(name.utf8))])
                notes.append(
                    "advertisement: the name placed in the scan response as complete (BlueZ does not say where it was or whether it was shortened)"
                )
            }
        }
        spillIntoScanResponse()
        if !advertisingData.fitsLegacy {
            notes.append(
                "advertisement: \(advertisingData.encodedLength) bytes of advertising data, more than the legacy 31 (extended advertising, or fields BlueZ kept from several advertisements)"
            )
        }
    }

    /// BlueZ's properties can hold more than one advertisement carried: fields of several advertisements, or (5.82,
    /// and a bonded device's stored info) an appearance read from the GAP service after connecting. What does not fit
    /// the advertising data goes to the scan response while it has room, least telling first (appearance, TX power,
    /// undecoded types, service data, manufacturer data); flags and service UUIDs, which scanners filter on, stay.
    private mutating func spillIntoScanResponse() {
        func rank(_ type: ADType) -> Int? {
            switch type {
            case .flags, .completeServiceUUIDs16, .completeServiceUUIDs32, .completeServiceUUIDs128: nil
            case .appearance: 0
            case .txPowerLevel: 1
            case .serviceData16, .serviceData32, .serviceData128: 3
            case .manufacturerData: 4
            default: 2
            }
        }
        var moved: [ADType] = []
        while !advertisingData.fitsLegacy {
            let room = AdvertisingData.legacyLimit - scanResponse.encodedLength
            let candidates = advertisingData.structures.indices.filter {
                rank(advertisingData.structures[$0].type) != nil && advertisingData.structures[$0].encodedLength <= room
            }
            guard
                let index = candidates.min(by: { rank(advertisingData.structures[$0].type)! < rank(advertisingData.structures[$1].type)! })
            else { break }
            let structure = advertisingData.structures.remove(at: index)
            scanResponse.structures.append(structure)
            moved.append(structure.type)
        }
        if !moved.isEmpty {
            notes.append(
                "advertisement: \(moved.map(\.description).joined(separator: ", ")) moved to the scan response: BlueZ's "
                    + "properties hold more than 31 bytes of advertising data (fields of several advertisements, or read from "
                    + "the device's GAP service after connecting)")
        }
    }

    /// The AD types BlueZ decodes into `Device1` properties (`eir_parse` in src/eir.c, 5.66 and 5.82) and so never
    /// reports in `AdvertisingData`: flags, service UUID lists, names, TX power, class of device, SSP hash and
    /// randomizer, device ID, service data, appearance, manufacturer data. A structure of one of these there
    /// is not from BlueZ, and would contradict the typed properties.
    static let decodedByBlueZ: Set<UInt8> = [
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0D, 0x0E, 0x0F, 0x10, 0x16, 0x19, 0x20, 0x21, 0xFF,
    ]

    /// A UUID as advertising data carries it: 2, 4 or 16 bytes, least significant first.
    static func wire(_ uuid: BluetoothUUID) -> [UInt8] {
        switch uuid.advertisedSize {
        case 2: uuid.littleEndian(compact: true)
        case 4: uuid.littleEndian32 ?? uuid.littleEndian(compact: false)
        default: uuid.littleEndian(compact: false)
        }
    }
}
