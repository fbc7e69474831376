import BlueZ
import Bluetooth
import ControlContract
import Profile

extension Fault {
    /// An installed fault as the control API lists it.
    init(_ fault: ActiveFault) {
        self.init(
            id: fault.id, on: FaultTrigger(rawValue: fault.spec.on.rawValue) ?? .start, action: fault.spec.action.name,
            summary: fault.spec.action.summary, characteristic: fault.spec.scope.characteristic, central: fault.spec.scope.central,
            nth: fault.spec.scope.nth, count: fault.spec.scope.count, probability: fault.spec.scope.probability,
            seed: fault.spec.scope.seed,
            matched: fault.matched, fired: fault.fired, exhausted: fault.exhausted, description: fault.spec.description)
    }
}

extension FaultRequest {
    /// The request that installs `spec` again (a profile's faults, offered as presets).
    public init(_ spec: FaultSpec) {
        let action: FaultActionBody =
            switch spec.action {
            case .delay(let min, let max):
                .delay(min == max ? .fixed(.milliseconds(min)) : .range(min: .milliseconds(min), max: .milliseconds(max)))
            case .drop: .drop
            case .error(let error): .error(.name(error.description))
            case .corrupt(.flipBits(let count)): .corrupt(.flipBits(count))
            case .corrupt(.replace(let at, let bytes)): .corrupt(.replace(at: at, hex: bytes.hexString(uppercase: false)))
            case .corrupt(.xor(let at, let mask)): .corrupt(.xor(at: at, hex: mask.hexString(uppercase: false)))
            case .truncate(let count): .truncate(count)
            case .duplicate(let copies): .duplicate(copies == 1 ? nil : copies)
            case .reorder: .reorder
            case .disconnect: .disconnect
            case .silence(let milliseconds): .silence(.milliseconds(milliseconds))
            case .advertise(let variant): .advertise(variant)
            case .powerCycle(let milliseconds): .powerCycle(.milliseconds(milliseconds))
            case .refusePairing: .refuse
            case .wrongPasskey: .wrongPasskey
            case .forgetBonds: .forgetBonds
            }
        self.init(on: FaultTrigger(rawValue: spec.on.rawValue), action: action)
        id = spec.id
        description = spec.description
        characteristic = spec.scope.characteristic
        central = spec.scope.central
        if spec.scope.nth != 1 { nth = spec.scope.nth }
        if spec.scope.count != (spec.scope.nth != 1 ? 1 : nil) { count = spec.scope.count }
        if spec.scope.probability != 1 { probability = spec.scope.probability }
        seed = spec.scope.seed
        if spec.scope.afterMilliseconds != 0 { after = .milliseconds(spec.scope.afterMilliseconds) }
    }
}

extension Event {
    /// A logged event in the contract's form (what ``EmulatorEvent/json`` writes).
    public init(_ event: EmulatorEvent) {
        self.init(
            seq: event.sequence, t: (event.time * 1000).rounded() / 1000, event: event.kind, central: event.central,
            characteristic: event.characteristic, value: event.value?.hexString(uppercase: false), detail: event.detail)
    }
}

extension ADField {
    init(_ structure: ADStructure) {
        self.init(type: Int(structure.type.rawValue), name: structure.type.description, hex: structure.data.hexString(uppercase: false))
    }
}

/// The legacy advertising data and scan response BlueZ builds for an advertisement, as bytes: flags and
/// everything but the name in the advertising data, the local name in the scan response (as
/// ``AdvertisementBudget`` counts them). TX power included with `includes: tx-power` is shown as 0 dBm:
/// the controller fills in the real level.
public enum AdvertisementBytes {
    public static func build(_ advertisement: Advertisement) -> (advertisingData: AdvertisingData, scanResponse: AdvertisingData) {
        var data: [ADStructure] = [ADStructure(type: .flags, data: [advertisement.discoverable == false ? 0x04 : 0x06])]
        func uuidLists(_ uuids: [String], types: [Int: ADType]) {
            let parsed = uuids.compactMap(BluetoothUUID.init)
            for size in [2, 4, 16] {
                let sized = parsed.filter { $0.advertisedSize == size }
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
        for (uuidText, bytes) in advertisement.serviceData.sorted(by: { $0.key < $1.key }) {
            guard let uuid = BluetoothUUID(uuidText) else { continue }
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

    /// The advertisement's fields and bytes for the status.
    public static func info(_ advertisement: Advertisement) -> AdvertisementInfo {
        let (data, scan) = build(advertisement)
        func payload(_ data: AdvertisingData) -> ADPayload {
            ADPayload(hex: data.bytes.hexString(uppercase: false), structures: data.structures.map(ADField.init))
        }
        return AdvertisementInfo(
            localName: advertisement.localName, serviceUUIDs: advertisement.serviceUUIDs, solicitUUIDs: advertisement.solicitUUIDs,
            manufacturerData: advertisement.manufacturerData.sorted { $0.key < $1.key }.map {
                CompanyData(company: Int($0.key), hex: $0.value.hexString(uppercase: false))
            },
            serviceData: advertisement.serviceData.sorted { $0.key < $1.key }.map {
                ServiceData(uuid: $0.key, hex: $0.value.hexString(uppercase: false))
            },
            appearance: advertisement.appearance.map(Int.init), txPower: advertisement.txPower.map(Int.init),
            otherStructures: advertisement.data.sorted { $0.key < $1.key }.map {
                ADField(ADStructure(type: ADType(rawValue: $0.key), data: $0.value))
            },
            advertisingData: payload(data), scanResponse: payload(scan))
    }
}
