import Bluetooth
import Capture
import CaptureTestSupport
import Testing

@Suite struct SummaryTests {
    @Test func perDeviceNamesAdvertisingConnectionsAndOperations() throws {
        var script = CaptureScript()
        script.event(SyntheticHCI.readBDAddrComplete(localAddress))
        script.event(SyntheticHCI.legacyAdvertisingReports([(0x00, 1, peerA, [5, 0x09] + Array("Lock".utf8) + [0, 0], -40)]))
        script.event(SyntheticHCI.legacyAdvertisingReports([(0x04, 1, peerA, [3, 0x03, 0x0F, 0x18], -40)]))
        script.event(SyntheticHCI.legacyAdvertisingReports([(0x03, 0, peerB, [], -90)]))
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x40, peer: peerA, peerType: 1))
        script.att(handle: 0x40, .readByTypeRequest, [1, 0, 0xFF, 0xFF, 0x03, 0x28], from: .hostToController)
        script.att(handle: 0x40, .readByTypeResponse, [7, 2, 0, 0x02, 3, 0, 0x00, 0x2A], from: .controllerToHost)
        script.att(handle: 0x40, .readRequest, [3, 0], from: .hostToController)
        script.att(handle: 0x40, .readResponse, Array("Noke Lock".utf8), from: .controllerToHost)
        script.event(SyntheticHCI.disconnectionComplete(handle: 0x40))
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x41, role: 1, peer: peerA, peerType: 1))
        script.att(handle: 0x41, .writeCommand, [5, 0, 1], from: .controllerToHost)
        script.event(SyntheticHCI.leConnectionComplete(handle: 0, peer: .zero, status: 0x3E))
        let summary = try CaptureSummary.read(bytes: script.btsnoop())
        #expect(summary.controllers.first?.publicAddress == localAddress)
        #expect(summary.devices.count == 2)
        let lock = summary.devices[0]
        #expect(lock.address == DeviceAddress(peerA, type: .random))
        #expect(lock.names == ["Lock", "Noke Lock"] && lock.deviceName == "Noke Lock")
        #expect(lock.advertisingReports == 2 && lock.scanResponses == 1)
        #expect(lock.connections.map(\.openedFrame) == [5, 11] && lock.roles == [.central, .peripheral])
        #expect(lock.attOperations == [.readByTypeRequest: 1, .readByTypeResponse: 1, .readRequest: 1, .readResponse: 1, .writeCommand: 1])
        #expect(summary.devices[1].advertisingReports == 1 && summary.devices[1].connections.isEmpty)
        #expect(summary.failedConnections == 1)
        #expect(summary.attOperations[.readRequest] == 1)
        #expect(summary.duration == Int64(script.packets.count - 1) * 1000)
        #expect(summary.format == .btsnoop(datalink: 1002))
    }

    @Test func attOnlyCapturesListAnUnknownPeer() throws {
        var script = CaptureScript()
        script.att(handle: 0x40, .writeCommand, [5, 0, 1], from: .hostToController)
        script.att(handle: 0x40, .handleValueNotification, [6, 0, 1], from: .controllerToHost)
        let summary = try CaptureSummary.read(bytes: script.btsnoop())
        #expect(summary.devices.map(\.identity) == [.unknownPeer(controller: 0, handle: 0x40)])
        #expect(summary.devices[0].attPDUs == 2)
        #expect(summary.notes.contains(.attOnlyExport) && summary.notes.contains(.noAdvertisingReports))
    }

    @Test func aResolvedPeerIsOneDeviceWithItsAdvertisingAddress() throws {
        let rpa = BluetoothAddress("4A:00:00:00:00:01")!
        var script = CaptureScript()
        script.event(SyntheticHCI.legacyAdvertisingReports([(0x00, 1, rpa, [4, 0x09] + Array("Fit".utf8), -40)]))
        var complete = SyntheticHCI.leConnectionComplete(handle: 0x40, peer: peerA, peerType: 2, enhanced: true)
        complete.replaceSubrange(20..<26, with: rpa.littleEndian)  // peer resolvable private address
        script.event(complete)
        let summary = try CaptureSummary.read(bytes: script.btsnoop())
        #expect(summary.devices.count == 1)
        #expect(summary.devices[0].address == DeviceAddress(peerA, type: .publicIdentity))
        #expect(summary.devices[0].names == ["Fit"] && summary.devices[0].connections.count == 1)
    }
}
