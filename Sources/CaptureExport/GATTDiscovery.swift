import Bluetooth

/// The discovery a central runs on a table, as request and response PDUs: primary then secondary services by
/// Read By Group Type, then per service its includes and characteristic declarations by Read By Type, and per
/// characteristic its descriptors by Find Information — each search ending with Attribute Not Found where the
/// device has nothing more, and each response packed as the server packs it (entries of one size, within the MTU).
enum GATTDiscovery {
    static func steps(_ table: ExportTable, mtu: Int) -> [ATTStep] {
        var steps: [ATTStep] = []
        for primary in [true, false] {
            groups(
                table.services.filter { $0.primary == primary }, type: primary ? .primaryService : .secondaryService, mtu: mtu, into: &steps
            )
        }
        for service in table.services {
            let includes = service.includes.map { include in
                (
                    include.handle,
                    HCIPacket.le16(include.start.rawValue) + HCIPacket.le16(include.end.rawValue)
                        + (include.uuid.uint16 != nil ? include.uuid.littleEndian() : [])
                )
            }
            byType(.include, from: service.handle, to: service.end, entries: includes, mtu: mtu, into: &steps)
            let declarations = service.characteristics.map { characteristic in
                (
                    characteristic.declaration,
                    [characteristic.properties.rawValue] + HCIPacket.le16(characteristic.value.rawValue)
                        + characteristic.uuid.littleEndian()
                )
            }
            byType(.characteristic, from: service.handle, to: service.end, entries: declarations, mtu: mtu, into: &steps)
            for characteristic in service.characteristics {
                guard let first = characteristic.value.next, first <= characteristic.end else { continue }
                information(characteristic.descriptors, from: first, to: characteristic.end, mtu: mtu, into: &steps)
            }
        }
        return steps
    }

    /// Read By Group Type over the whole handle range for `services` (in handle order).
    static func groups(_ services: [ExportTable.Service], type: BluetoothUUID, mtu: Int, into steps: inout [ATTStep]) {
        var start: AttributeHandle = 1
        var next = 0
        while true {
            steps.append(.central(.readByGroupTypeRequest, HCIPacket.le16(start.rawValue) + HCIPacket.le16(0xFFFF) + type.littleEndian()))
            guard next < services.count else {
                steps.append(.error(.readByGroupTypeRequest, handle: start, .attributeNotFound))
                return
            }
            let size = 4 + services[next].uuid.littleEndian().count
            var entries: [UInt8] = []
            while next < services.count, 4 + services[next].uuid.littleEndian().count == size, 2 + entries.count + size <= mtu {
                entries +=
                    HCIPacket.le16(services[next].handle.rawValue) + HCIPacket.le16(services[next].end.rawValue)
                    + services[next].uuid.littleEndian()
                next += 1
            }
            steps.append(.device(.readByGroupTypeResponse, [UInt8(size)] + entries))
            guard let after = services[next - 1].end.next else { return }
            start = after
        }
    }

    /// Read By Type of `type` between `first` and `last`; `entries` are (handle, value) in handle order.
    static func byType(
        _ type: BluetoothUUID, from first: AttributeHandle, to last: AttributeHandle, entries: [(AttributeHandle, [UInt8])], mtu: Int,
        into steps: inout [ATTStep]
    ) {
        var start = first
        var next = 0
        while true {
            steps.append(.central(.readByTypeRequest, HCIPacket.le16(start.rawValue) + HCIPacket.le16(last.rawValue) + type.littleEndian()))
            guard next < entries.count else {
                steps.append(.error(.readByTypeRequest, handle: start, .attributeNotFound))
                return
            }
            let size = 2 + entries[next].1.count
            var packed: [UInt8] = []
            while next < entries.count, 2 + entries[next].1.count == size, 2 + packed.count + size <= mtu {
                packed += HCIPacket.le16(entries[next].0.rawValue) + entries[next].1
                next += 1
            }
            steps.append(.device(.readByTypeResponse, [UInt8(size)] + packed))
            let reached = entries[next - 1].0
            guard reached < last, let after = reached.next else { return }
            start = after
        }
    }

    /// Find Information between `first` and `last` for a characteristic's descriptors.
    static func information(
        _ descriptors: [(handle: AttributeHandle, uuid: BluetoothUUID)], from first: AttributeHandle, to last: AttributeHandle, mtu: Int,
        into steps: inout [ATTStep]
    ) {
        var start = first
        var next = 0
        while true {
            steps.append(.central(.findInformationRequest, HCIPacket.le16(start.rawValue) + HCIPacket.le16(last.rawValue)))
            guard next < descriptors.count else {
                steps.append(.error(.findInformationRequest, handle: start, .attributeNotFound))
                return
            }
            let short = descriptors[next].uuid.uint16 != nil
            let size = short ? 4 : 18
            var packed: [UInt8] = []
            while next < descriptors.count, (descriptors[next].uuid.uint16 != nil) == short, 2 + packed.count + size <= mtu {
                packed += HCIPacket.le16(descriptors[next].handle.rawValue) + descriptors[next].uuid.littleEndian()
                next += 1
            }
            steps.append(.device(.findInformationResponse, [short ? 1 : 2] + packed))
            let reached = descriptors[next - 1].handle
            guard reached < last, let after = reached.next else { return }
            start = after
        }
    }
}
