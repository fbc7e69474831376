import Bluetooth
import Capture
import CaptureExport
import Replica
import Testing

/// Hostile replicas (absurd sizes, times, handles) write a bounded file that reads back without a problem.
@Suite struct BoundsTests {
    /// 10,000 services whose values are 1 MB each, notifications of 1 MB: values are cut to ATT's 512 bytes, the
    /// MTU is raised so that notifications fit, and the file stays a few megabytes.
    @Test func absurdSizes() throws {
        var replica = DeviceReplica(source: "hostile")
        replica.address = RelaySession.device
        let huge = [UInt8](repeating: 0x5A, count: 1 << 20)
        replica.advertisingData = AdvertisingData([ADStructure(type: .manufacturerData, data: huge)])
        for index in 0..<10_000 {
            let base = UInt16(1 + index * 3)
            var service = DeviceReplica.Service(
                uuid: BluetoothUUID(UInt16(0xA000 + index % 0x1000)), handle: AttributeHandle(rawValue: base),
                endHandle: AttributeHandle(rawValue: base + 2))
            var characteristic = DeviceReplica.Characteristic(
                uuid: BluetoothUUID(0x2A19), properties: [.read, .notify], declarationHandle: AttributeHandle(rawValue: base + 1),
                valueHandle: AttributeHandle(rawValue: base + 2))
            characteristic.value = huge
            service.characteristics = [characteristic]
            replica.services.append(service)
        }
        replica.conversation = (0..<20).map {
            DeviceReplica.Event(.notification(handle: 3, value: huge, indication: false), time: Double($0))
        }
        let output = BTSnoopExport.write(replica, central: RelaySession.phone, start: RelaySession.start)
        #expect(output.bytes.count < 16 << 20)
        #expect(output.notes.contains { $0.contains("cut to it") })
        #expect(output.notes.contains { $0.contains("ATT MTU 515") })
        let trace = CaptureTrace(reader: try CaptureReader(bytes: output.bytes))
        #expect(trace.problems.isEmpty)
        #expect(trace.attPDUs.filter { $0.opcode == .handleValueNotification }.count == 20)
        #expect(trace.attPDUs.contains { $0.opcode == .readByGroupTypeResponse })
    }

    /// The size limit stops the file between events: what is written reads back whole, and the notes say where it stopped.
    @Test func sizeLimit() throws {
        var limits = BTSnoopExport.Limits()
        limits.maximumBytes = 4096
        var replica = RelaySession.replica()
        replica.conversation += (0..<1_000).map {
            DeviceReplica.Event(.write(handle: 11, value: [UInt8($0 & 0xFF)], withResponse: true), time: 7 + Double($0) / 1000)
        }
        let output = BTSnoopExport.write(replica, central: RelaySession.phone, start: RelaySession.start, limits: limits)
        #expect(output.bytes.count <= 4096)
        #expect(output.bytes.count > 2048)
        #expect(output.notes.contains { $0.contains("the capture stops at event") })
        let reader = try CaptureReader(bytes: output.bytes)
        var records = 0
        while reader.next() != nil { records += 1 }
        #expect(reader.problems.isEmpty)
        #expect(records == output.frames)
    }

    /// A limit smaller than the set-up and discovery: the file is the header alone or the records before the
    /// connection, and the notes say so.
    @Test func limitBelowTheDiscovery() throws {
        var limits = BTSnoopExport.Limits()
        limits.maximumBytes = 300
        var replica = RelaySession.replica()
        replica.conversation = []
        let output = BTSnoopExport.write(replica, central: RelaySession.phone, start: RelaySession.start, limits: limits)
        #expect(output.bytes.count <= 300)
        #expect(output.notes.contains { $0.contains("before the connection and discovery") })
        let trace = CaptureTrace(reader: try CaptureReader(bytes: output.bytes))
        #expect(trace.problems.isEmpty)
        #expect(trace.connections.isEmpty)
    }

    /// Times that are not numbers, negative, or centuries away, handles missing or clashing, connections numbered
    /// anyhow, reads at absurd offsets: no crash, a readable file, the clashes noted.
    @Test func hostileFields() throws {
        var replica = RelaySession.replica()
        replica.address = nil
        replica.mtu = 0
        replica.services.append(DeviceReplica.Service(uuid: BluetoothUUID(0x1234)))  // no handle
        replica.services.append(DeviceReplica.Service(uuid: BluetoothUUID(0x1235), handle: 9, endHandle: 9))  // inside another
        var orphan = DeviceReplica.Service(uuid: BluetoothUUID(0x1236), handle: 0xFFF0, endHandle: 3)
        orphan.characteristics = [DeviceReplica.Characteristic(uuid: BluetoothUUID(0x2A00), properties: [.read])]
        orphan.includes = [0xBEEF, 1, 4, 8]
        replica.services.append(orphan)
        replica.conversation += [
            DeviceReplica.Event(.read(handle: 0, offset: Int.max, value: [1, 2, 3]), time: .nan, connection: Int.min),
            DeviceReplica.Event(.read(handle: 0xFFFF, offset: -5, value: [UInt8](repeating: 7, count: 600)), time: -1, connection: Int.max),
            DeviceReplica.Event(.subscribe(handle: 0xFFFF, notify: true, indicate: true), time: .infinity),
            DeviceReplica.Event(.error(handle: 1, request: .findInformationRequest, code: ATTErrorCode(rawValue: 0xFF)), time: 1e300),
            DeviceReplica.Event(.error(handle: 1, request: .writeRequest, code: ATTErrorCode(rawValue: 0x80)), time: 1e-9),
            DeviceReplica.Event(.write(handle: 2, value: [], withResponse: false), time: nil, connection: 0),
            DeviceReplica.Event(.disconnected, connection: 99),
        ]
        let output = BTSnoopExport.write(replica, central: RelaySession.phone, centralType: .random, start: .min)
        #expect(output.notes.contains { $0.contains("made-up static random address") })
        #expect(output.notes.contains { $0.contains("has no handle") })
        #expect(output.notes.contains { $0.contains("overlaps") })
        #expect(output.notes.contains { $0.contains("subscriptions") })
        let trace = CaptureTrace(reader: try CaptureReader(bytes: output.bytes))
        #expect(trace.problems.isEmpty)
        // The two recorded, connections Int.min, Int.max and 0, and connection 1 again after its disconnection.
        #expect(trace.connections.count == 6)
    }

    /// 5,000 connections that never disconnect: at most 16 links are open at once (the oldest is closed for a new
    /// one), so the controller's handles never run out; a connection that connects again without a disconnection
    /// first ends its old link.
    @Test func manyConnections() throws {
        var replica = RelaySession.replica()
        replica.conversation = (0..<5_000).map {
            DeviceReplica.Event(.read(handle: 13, offset: 0, value: [1]), time: Double($0) / 100, connection: $0 + 10)
        }
        replica.conversation += [
            DeviceReplica.Event(.connected(nil), time: 60, connection: 7), DeviceReplica.Event(.connected(nil), time: 61, connection: 7),
        ]
        let output = BTSnoopExport.write(replica, central: RelaySession.phone, start: RelaySession.start)
        let trace = CaptureTrace(reader: try CaptureReader(bytes: output.bytes))
        #expect(trace.problems.isEmpty)
        #expect(trace.connections.count == 5_002)
        #expect(trace.connections.filter { $0.closed == nil }.count == 16)
        #expect(Set(trace.connections.suffix(16).map(\.handle)).count == 16)
    }
}
