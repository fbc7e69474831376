import Bluetooth
import Replica

/// A replica's GATT table as a server holds it: services in handle order, each with its include declarations,
/// characteristics and descriptors, every handle known and in the order ATT requires. Attributes whose handles
/// are missing or out of order are left out (with a note): discovery can only show a table that could exist.
struct ExportTable {
    struct Include {
        var handle: AttributeHandle
        var start: AttributeHandle
        var end: AttributeHandle
        var uuid: BluetoothUUID
    }

    struct Characteristic {
        var uuid: BluetoothUUID
        var properties: CharacteristicProperties
        var declaration: AttributeHandle
        var value: AttributeHandle
        /// The last handle of the characteristic (before the next declaration or the service's end).
        var end: AttributeHandle
        var descriptors: [(handle: AttributeHandle, uuid: BluetoothUUID)]
        /// The client configuration's handle, when the table has one.
        var configuration: AttributeHandle?
    }

    struct Service {
        var uuid: BluetoothUUID
        var primary: Bool
        var handle: AttributeHandle
        var end: AttributeHandle
        var includes: [Include] = []
        var characteristics: [Characteristic] = []
    }

    private(set) var services: [Service] = []
    private(set) var notes: [String] = []
    /// Client configuration handles by the value handle they configure.
    private(set) var configurations: [AttributeHandle: AttributeHandle] = [:]
    /// The value handles of the characteristics laid out.
    private(set) var valueHandles: Set<AttributeHandle> = []

    init(_ replica: DeviceReplica) {
        var accepted: [(DeviceReplica.Service, Service)] = []
        var previousEnd: AttributeHandle = 0
        for source in replica.services.sorted(by: { ($0.handle ?? 0) < ($1.handle ?? 0) }) {
            guard let handle = source.handle, handle > 0 else {
                notes.append("service \(source.uuid) has no handle: left out of the discovery")
                continue
            }
            guard handle > previousEnd else {
                notes.append("service \(source.uuid) at \(handle) overlaps the one before it: left out")
                continue
            }
            guard let service = Self.service(source, notes: &notes) else { continue }
            accepted.append((source, service))
            previousEnd = service.end
        }
        // Includes name other services of the table by their declaration's handle.
        let byHandle = Dictionary(accepted.map { ($0.1.handle, $0.1) }, uniquingKeysWith: { first, _ in first })
        for index in accepted.indices {
            let (source, service) = accepted[index]
            var includes: [Include] = []
            let room = Int((service.characteristics.first?.declaration ?? service.end).rawValue) - Int(service.handle.rawValue) - 1
            for included in source.includes.prefix(max(room, 0)) {
                guard let target = byHandle[included] else {
                    notes.append("service \(source.uuid) includes \(included), not a service of the table: left out")
                    continue
                }
                includes.append(
                    Include(
                        handle: AttributeHandle(rawValue: service.handle.rawValue + UInt16(includes.count) + 1), start: target.handle,
                        end: target.end, uuid: target.uuid))
            }
            accepted[index].1.includes = includes
        }
        services = accepted.map(\.1)
        for service in services {
            for characteristic in service.characteristics {
                valueHandles.insert(characteristic.value)
                if let configuration = characteristic.configuration { configurations[characteristic.value] = configuration }
            }
        }
    }

    /// `source` with its characteristics checked in handle order; nil when the service itself cannot be laid out.
    private static func service(_ source: DeviceReplica.Service, notes: inout [String]) -> Service? {
        let handle = source.handle!
        var characteristics: [Characteristic] = []
        // Includes come right after the service declaration.
        var next = Int(handle.rawValue) + 1 + source.includes.count
        for item in source.characteristics.sorted(by: { ($0.valueHandle ?? 0) < ($1.valueHandle ?? 0) }) {
            guard let value = item.valueHandle, value > 0 else {
                notes.append("characteristic \(item.uuid) has no value handle: left out")
                continue
            }
            let declaration = item.declarationHandle ?? AttributeHandle(rawValue: value.rawValue - 1)
            guard Int(declaration.rawValue) >= next, declaration < value else {
                notes.append(
                    "characteristic \(item.uuid) at \(value) does not fit after the attributes before it: left out")
                continue
            }
            var characteristic = Characteristic(
                uuid: item.uuid, properties: item.properties, declaration: declaration, value: value, end: value, descriptors: [])
            for descriptor in item.descriptors.sorted(by: { ($0.handle ?? 0) < ($1.handle ?? 0) }) {
                guard let at = descriptor.handle, at > characteristic.end else {
                    notes.append("descriptor \(descriptor.uuid) of \(item.uuid) has no handle after its value's: left out")
                    continue
                }
                characteristic.descriptors.append((at, descriptor.uuid))
                characteristic.end = at
                if descriptor.uuid == .clientCharacteristicConfiguration && characteristic.configuration == nil {
                    characteristic.configuration = at
                }
            }
            next = Int(characteristic.end.rawValue) + 1
            characteristics.append(characteristic)
        }
        let last = characteristics.last?.end ?? AttributeHandle(rawValue: UInt16(clamping: Int(handle.rawValue) + source.includes.count))
        var end = source.endHandle ?? last
        if end < last {
            notes.append(
                "service \(source.uuid) ends at \(end) before its attributes: its end is taken as \(last)"
            )
            end = last
        }
        // A characteristic reaches up to the next declaration, the last one to the service's end.
        for index in characteristics.indices {
            characteristics[index].end =
                index + 1 < characteristics.count ? AttributeHandle(rawValue: characteristics[index + 1].declaration.rawValue - 1) : end
        }
        return Service(uuid: source.uuid, primary: source.isPrimary, handle: handle, end: end, characteristics: characteristics)
    }
}
