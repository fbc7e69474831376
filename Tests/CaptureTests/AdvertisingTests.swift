import Bluetooth
import Capture
import CaptureTestSupport
import Testing

@Suite struct AdvertisingTests {
    let nameData: [UInt8] = [2, 0x01, 0x06, 5, 0x09] + Array("Lamp".utf8)

    @Test func legacyReportsAllInOneEventAndScanResponses() throws {
        var script = CaptureScript()
        script.event(
            SyntheticHCI.legacyAdvertisingReports([
                (0x00, 0, peerA, nameData, -40),
                (0x03, 1, peerB, [], 127),
            ]))
        script.event(SyntheticHCI.legacyAdvertisingReports([(0x04, 0, peerA, [3, 0x03, 0x0F, 0x18], -41)]))
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.advertisers.map(\.address) == [DeviceAddress(peerA, type: .public), DeviceAddress(peerB, type: .random)])
        let lamp = trace.advertisers[0]
        #expect(lamp.reports.count == 2 && lamp.scanResponseCount == 1)
        #expect(lamp.names == ["Lamp"])
        #expect(lamp.reports[0].properties == [.connectable, .scannable, .legacy])
        #expect(lamp.reports[0].rssi == -40 && lamp.reports[0].subevent == .legacy)
        #expect(lamp.reports[1].isScanResponse && lamp.reports[1].advertisingData.serviceUUIDs == [BluetoothUUID(0x180F)])
        #expect(trace.advertisers[1].reports[0].rssi == nil)
        #expect(trace.statistics.advertisingReports == 3)
    }

    @Test func extendedReportsWithTheScanResponseBit() throws {
        var script = CaptureScript()
        script.event(SyntheticHCI.extendedAdvertisingReport(eventType: 0x13, address: peerA, data: nameData, rssi: -70, sid: 2))
        script.event(SyntheticHCI.extendedAdvertisingReport(eventType: 0x1B, address: peerA, data: [3, 0x03, 0x0F, 0x18]))
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        let reports = try #require(trace.advertisers.first?.reports)
        #expect(reports.map(\.isScanResponse) == [false, true])
        #expect(reports[0].properties == [.connectable, .scannable, .legacy])
        #expect(reports[0].advertisingSID == 2 && reports[0].rssi == -70 && reports[0].txPower == nil)
        #expect(reports[0].advertisingData.localName == "Lamp")
        #expect(reports.allSatisfy { $0.subevent == .extended && $0.dataStatus == .complete })
    }

    @Test func extendedFragmentsAreJoined() throws {
        var script = CaptureScript()
        let long = [UInt8](repeating: 0x41, count: 200)
        let data = [UInt8(long.count + 1), 0xFF] + long  // one manufacturer-data structure over three reports
        let pieces = [Array(data[0..<80]), Array(data[80..<160]), Array(data[160...])]
        script.event(SyntheticHCI.extendedAdvertisingReport(eventType: 0x01 | 0b01 << 5, address: peerA, data: pieces[0], sid: 1))
        script.event(SyntheticHCI.extendedAdvertisingReport(eventType: 0x01, address: peerB, data: nameData, sid: 1))
        script.event(SyntheticHCI.extendedAdvertisingReport(eventType: 0x01 | 0b01 << 5, address: peerA, data: pieces[1], sid: 1))
        script.event(SyntheticHCI.extendedAdvertisingReport(eventType: 0x01, address: peerA, data: pieces[2], sid: 1))
        // Truncated by the controller, and fragments that never finish.
        script.event(SyntheticHCI.extendedAdvertisingReport(eventType: 0x01 | 0b10 << 5, address: peerB, data: [2, 1, 6], sid: 3))
        script.event(SyntheticHCI.extendedAdvertisingReport(eventType: 0x01 | 0b01 << 5, address: peerB, data: [2, 1], sid: 4))
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        let reports = trace.advertisers.flatMap(\.reports).sorted { $0.frame < $1.frame }
        #expect(reports.map(\.frame) == [2, 4, 5, 6])
        #expect(reports[1].data == data && reports[1].fragments == 3 && reports[1].dataProblem == nil)
        #expect(reports[1].advertisingData.structures.first?.data.count == 200)
        #expect(reports.map(\.dataStatus) == [.complete, .complete, .truncated, .incomplete])
        #expect(trace.statistics.advertisingReports == 6)
    }

    @Test func directedReportsAndADProblems() throws {
        var script = CaptureScript()
        script.event(
            SyntheticHCI.leMeta(0x0B, [1, 0x01, 1] + peerA.littleEndian + [0] + localAddress.littleEndian + [UInt8(bitPattern: -55)]))
        script.event(SyntheticHCI.legacyAdvertisingReports([(0x00, 0, peerB, [5, 0x09, 0x41], -40)]))
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        let direct = try #require(trace.advertisers.first?.reports.first)
        #expect(direct.subevent == .directed && direct.properties.contains(.directed))
        #expect(direct.directAddress == DeviceAddress(localAddress, type: .public) && direct.rssi == -55)
        let broken = try #require(trace.advertisers.last?.reports.first)
        #expect(broken.dataProblem?.offset == 0)
        #expect(trace.problems.isEmpty)
    }

    @Test func malformedReportsAreProblems() throws {
        var script = CaptureScript()
        script.event(SyntheticHCI.leMeta(0x02, [2, 0x00, 0x00] + peerA.littleEndian + [0, 0xC0]))  // claims two reports, holds one
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.advertisers.first?.reports.count == 1)
        #expect(trace.problems.map(\.frame) == [1])
    }
}

@Suite struct SMPTests {
    @Test func pairingFeaturesFailuresAndKeyDistributionWithoutKeys() throws {
        var script = CaptureScript()
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x40, peer: peerA))
        script.l2cap(handle: 0x40, channel: 6, [0x0B, 0x0D], from: .controllerToHost)
        script.l2cap(handle: 0x40, channel: 6, [0x01, 0x04, 0x00, 0x2D, 0x10, 0x0F, 0x0F], from: .hostToController)
        script.l2cap(handle: 0x40, channel: 6, [0x02, 0x03, 0x00, 0x09, 0x07, 0x03, 0x02], from: .controllerToHost)
        script.l2cap(handle: 0x40, channel: 6, [0x0C] + [UInt8](repeating: 7, count: 64), from: .hostToController, fragment: 27)
        script.l2cap(handle: 0x40, channel: 6, [0x06] + [UInt8](repeating: 9, count: 16), from: .controllerToHost)
        script.l2cap(handle: 0x40, channel: 6, [0x09, 0x01] + peerA.littleEndian, from: .controllerToHost)
        script.l2cap(handle: 0x40, channel: 6, [0x05, 0x08], from: .hostToController)
        script.l2cap(handle: 0x40, channel: 6, [0x01, 0x04], from: .hostToController)
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        let messages = trace.smpPDUs.map(\.message)
        #expect(messages[0] == .securityRequest([.bonding, .mitm, .secureConnections]))
        guard case .pairingRequest(let request) = messages[1], case .pairingResponse(let response) = messages[2] else {
            Issue.record("\(messages)")
            return
        }
        #expect(request.ioCapability == .keyboardDisplay && request.authRequirements == [.bonding, .mitm, .secureConnections, .ct2])
        #expect(request.maximumKeySize == 16 && request.initiatorKeys == [.encryptionKey, .identityKey, .signingKey, .linkKey])
        #expect(response.ioCapability == .noInputNoOutput && response.responderKeys == [.identityKey])
        #expect(messages[3] == .pairingPublicKey && messages[4] == .encryptionInformation)
        #expect(messages[4].isKeyDistribution)
        #expect(messages[5] == .identityAddressInformation(DeviceAddress(peerA, type: .random)))
        #expect(messages[6] == .pairingFailed(SMPFailureReason(rawValue: 0x08)))
        #expect(messages[7] == .malformed(code: 1, "1 parameter bytes, 6 expected"))
        #expect(trace.smpPDUs.map(\.direction).prefix(2) == [.peripheralToCentral, .centralToPeripheral])
        #expect(trace.problems.map(\.reason) == [.malformedSMP(code: 1, "1 parameter bytes, 6 expected")])
    }

    @Test func leSignallingParameterUpdatesAndCreditBasedChannels() throws {
        var script = CaptureScript()
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x40, peer: peerA))
        script.l2cap(handle: 0x40, channel: 5, [0x12, 1, 8, 0, 6, 0, 12, 0, 0, 0, 0xF4, 1], from: .controllerToHost)
        script.l2cap(handle: 0x40, channel: 5, [0x13, 1, 2, 0, 0, 0], from: .hostToController)
        script.l2cap(handle: 0x40, channel: 5, [0x17, 2, 10, 0, 0x27, 0, 0x05, 0x02, 0x40, 0, 10, 0, 0x40, 0], from: .hostToController)
        script.l2cap(handle: 0x40, channel: 0x40, [0x52, 3, 0, 1], from: .controllerToHost)
        script.l2cap(handle: 0x40, channel: 0x40, [0x52, 3, 0, 1], from: .controllerToHost)
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(
            trace.signalling.map(\.message) == [
                .connectionParameterUpdateRequest(intervalMin: 6, intervalMax: 12, latency: 0, timeout: 500),
                .connectionParameterUpdateResponse(accepted: true),
                .creditBasedConnectionRequest(psm: 0x27, enhanced: true),
            ])
        #expect(
            trace.notes.filter { if case .undecodedChannel = $0 { true } else { false } }
                == [.undecodedChannel(connection: 0, channel: 0x40, psm: 0x27, frame: 5)])
        #expect(trace.attPDUs.isEmpty)
    }

    @Test func attOverBREDRFollowsTheChannelOpenedForItsPSM() throws {
        var script = CaptureScript()
        script.event(SyntheticHCI.event(0x03, [0, 0x33, 0] + peerA.littleEndian + [1, 0]))
        // Local requests PSM 0x1F from its channel 0x0041; the peer answers with its channel 0x0070.
        script.l2cap(handle: 0x33, channel: 1, [0x02, 1, 4, 0, 0x1F, 0, 0x41, 0], from: .hostToController)
        script.l2cap(handle: 0x33, channel: 1, [0x03, 1, 8, 0, 0x70, 0, 0x41, 0, 0, 0, 0, 0], from: .controllerToHost)
        script.l2cap(handle: 0x33, channel: 0x70, [0x10, 1, 0, 0xFF, 0xFF, 0x00, 0x28], from: .hostToController)
        script.l2cap(handle: 0x33, channel: 0x41, [0x11, 6, 1, 0, 5, 0, 0x00, 0x18], from: .controllerToHost)
        script.l2cap(handle: 0x33, channel: 0x42, [0x52, 3, 0, 1], from: .hostToController)  // some other channel
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.connections.first?.link == .bredr)
        #expect(trace.opcodes == [.readByGroupTypeRequest, .readByGroupTypeResponse])
        #expect(trace.attPDUs.map(\.channel) == [0x70, 0x41])
        #expect(trace.attTransactions.first?.outcome == .answered)
        #expect(trace.notes.contains(.classicConnections(count: 1)))
        #expect(trace.connections.first?.localRole == .central)
    }
}
