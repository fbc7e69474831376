import Bluetooth
import Capture
import CaptureTestSupport
import Testing

@Suite struct ConnectionTests {
    @Test func handlesAreReusedAcrossConnections() throws {
        var script = CaptureScript()
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x40, role: 0, peer: peerA, peerType: 1))
        script.att(handle: 0x40, .writeCommand, [3, 0, 1], from: .hostToController)
        script.event(SyntheticHCI.disconnectionComplete(handle: 0x40, reason: 0x16))
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x40, role: 1, peer: peerB, enhanced: true))
        script.att(handle: 0x40, .writeCommand, [3, 0, 2], from: .hostToController)
        // A third connection on the same handle without a disconnection in between.
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x40, role: 0, peer: peerA, peerType: 1))
        script.att(handle: 0x40, .writeCommand, [3, 0, 3], from: .hostToController)
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.connections.count == 3)
        #expect(
            trace.connections.map(\.peer) == [
                DeviceAddress(peerA, type: .random), DeviceAddress(peerB, type: .public), DeviceAddress(peerA, type: .random),
            ])
        #expect(trace.connections.map(\.origin) == [.leConnectionComplete, .leEnhancedConnectionComplete, .leConnectionComplete])
        #expect(trace.connections[0].closed?.frame == 3 && trace.connections[0].disconnectReason == .localHostTerminated)
        #expect(trace.connections[1].closed?.frame == 6 && trace.connections[1].disconnectReason == nil)
        #expect(trace.connections[2].isOpen)
        #expect(trace.attPDUs.map(\.connection) == [0, 1, 2])
        // The local host is central on the first, peripheral on the second.
        #expect(trace.attPDUs.map(\.direction) == [.centralToPeripheral, .peripheralToCentral, .centralToPeripheral])
        #expect(trace.connections[0].interval == 24)
    }

    @Test func failedAttemptsAreNotConnections() throws {
        var script = CaptureScript()
        script.command(SyntheticHCI.leCreateConnection(peer: peerA, peerType: 1))
        script.event(SyntheticHCI.leConnectionComplete(handle: 0, peer: .zero, enhanced: true, status: 0x02))
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.connections.isEmpty)
        #expect(trace.failedConnections.map(\.status) == [.unknownConnectionIdentifier])
        #expect(trace.failedConnections.first?.peer == nil)
    }

    @Test func encryptionChangesAndKeyRefreshes() throws {
        var script = CaptureScript()
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x40, peer: peerA))
        script.event(SyntheticHCI.encryptionChange(handle: 0x40))
        script.event(SyntheticHCI.encryptionChange(handle: 0x40, keySize: 16))
        script.event(SyntheticHCI.event(0x30, [0, 0x40, 0]))
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        let encryption = try #require(trace.connections.first?.encryption)
        #expect(encryption.map(\.enabled) == [1, 1, nil])
        #expect(encryption.map(\.keySize) == [nil, 16, nil])
        #expect(encryption[2].isKeyRefresh)
    }

    @Test func attOnlyExportsMakeUpAConnectionPerHandle() throws {
        var script = CaptureScript()
        script.att(handle: 0x40, .exchangeMTURequest, [0x05, 0x02], from: .hostToController)
        script.att(handle: 0x40, .exchangeMTUResponse, [0xF7, 0x00], from: .controllerToHost)
        script.att(handle: 0x40, .readByGroupTypeRequest, [1, 0, 0xFF, 0xFF, 0x00, 0x28], from: .hostToController)
        script.att(handle: 0x41, .handleValueNotification, [3, 0, 1], from: .controllerToHost)
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.connections.count == 2)
        #expect(trace.connections.allSatisfy { $0.peer == nil && $0.roleInferred && $0.localRole == .central })
        #expect(trace.connections.map(\.origin) == [.aclData(peerFromCreateConnection: false), .aclData(peerFromCreateConnection: false)])
        #expect(trace.notes.contains(.attOnlyExport))
        #expect(trace.notes.contains(.connectionFromACLData(connection: 1, controller: 0, handle: 0x41, frame: 4)))
        #expect(trace.notes.contains(.roleInferred(connection: 0, role: .central, evidenceFrame: 3)))
        #expect(trace.notes.contains(.noAdvertisingReports))
        #expect(trace.attPDUs.map(\.direction) == [.centralToPeripheral, .peripheralToCentral, .centralToPeripheral, .peripheralToCentral])
    }

    @Test func theDiscoveringSideBecomesTheCentralAndEarlierPDUsAreRelabelled() throws {
        var script = CaptureScript()
        // The capturing host is the peripheral here: the peer discovers its services.
        script.att(handle: 0x40, .exchangeMTURequest, [0x05, 0x02], from: .controllerToHost)
        script.att(handle: 0x40, .exchangeMTUResponse, [0xF7, 0x00], from: .hostToController)
        script.att(handle: 0x40, .readByGroupTypeRequest, [1, 0, 0xFF, 0xFF, 0x00, 0x28], from: .controllerToHost)
        // A later discovery the other way does not flip it back.
        script.att(handle: 0x40, .findInformationRequest, [1, 0, 0xFF, 0xFF], from: .hostToController)
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.connections.first?.localRole == .peripheral)
        #expect(trace.attPDUs.map(\.direction) == [.centralToPeripheral, .peripheralToCentral, .centralToPeripheral, .peripheralToCentral])
        #expect(trace.attTransactions.first?.request.direction == .centralToPeripheral)
        #expect(trace.attTransactions.first?.response?.direction == .peripheralToCentral)
    }

    @Test func inferredRolesRelabelOnlyTheirOwnConnection() throws {
        var script = CaptureScript()
        script.att(handle: 0x40, .writeCommand, [3, 0, 1], from: .hostToController)
        script.att(handle: 0x41, .writeCommand, [3, 0, 1], from: .hostToController)
        script.att(handle: 0x40, .readByGroupTypeRequest, [1, 0, 0xFF, 0xFF, 0x00, 0x28], from: .controllerToHost)
        script.att(handle: 0x41, .findInformationRequest, [1, 0, 0xFF, 0xFF], from: .hostToController)
        script.event(SyntheticHCI.disconnectionComplete(handle: 0x40))
        // The same handle again, made up afresh, its role assumed until discovery says otherwise.
        script.att(handle: 0x40, .writeCommand, [3, 0, 2], from: .hostToController)
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.connections.map(\.localRole) == [.peripheral, .central, .central])
        #expect(trace.attPDUs.map(\.connection) == [0, 1, 0, 1, 2])
        #expect(
            trace.attPDUs.map(\.direction) == [
                .peripheralToCentral, .centralToPeripheral, .centralToPeripheral, .centralToPeripheral,
                .centralToPeripheral,
            ])
    }

    @Test func notesNamingConnectionsAreCappedCaptureWideOnesKept() throws {
        var script = CaptureScript()
        for _ in 0..<(CaptureNote.limit + 10) {
            script.att(handle: 0x40, .writeCommand, [3, 0, 1], from: .hostToController)
            script.event(SyntheticHCI.disconnectionComplete(handle: 0x40))
        }
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.connections.count == CaptureNote.limit + 10)
        #expect(trace.notes.count == CaptureNote.limit + 1)
        #expect(trace.notes.last == .noAdvertisingReports)
    }

    @Test func aCreateConnectionNamesThePeerWhenTheEventIsMissing() throws {
        var script = CaptureScript()
        script.event(SyntheticHCI.readBDAddrComplete(localAddress))
        script.command(SyntheticHCI.leCreateConnection(peer: peerA, peerType: 1))
        script.att(handle: 0x40, .readRequest, [3, 0], from: .hostToController)
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.connections.first?.peer == DeviceAddress(peerA, type: .random))
        #expect(trace.connections.first?.origin == .aclData(peerFromCreateConnection: true))
        #expect(trace.controllers.first?.publicAddress == localAddress)
        #expect(!trace.notes.contains(.attOnlyExport))
    }

    /// An iPhone's PacketLogger log (github.com/cagnulein/Bafang-RideSync, bluetoothd-hci-latest.pklg): its LE
    /// Extended Create Connection used the accept list (peer address ignored, sent as zeros) while a link opened
    /// before the log began carried 1,692 ATT PDUs; import named that link's peer 00:00:00:00:00:00 (public).
    @Test(arguments: [false, true])
    func aCreateConnectionThroughTheAcceptListNamesNoPeer(extended: Bool) throws {
        var script = CaptureScript()
        script.command(
            extended
                ? SyntheticHCI.leExtendedCreateConnection(peer: .zero, filterPolicy: 1)
                : SyntheticHCI.leCreateConnection(peer: .zero, filterPolicy: 1))
        script.att(handle: 0x40, .readRequest, [3, 0], from: .hostToController)
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.connections.first?.peer == nil)
        #expect(trace.connections.first?.origin == .aclData(peerFromCreateConnection: false))
    }

    @Test func anExtendedCreateConnectionNamesThePeerWhenTheEventIsMissing() throws {
        var script = CaptureScript()
        script.command(SyntheticHCI.leExtendedCreateConnection(peer: peerA, peerType: 1))
        script.att(handle: 0x40, .readRequest, [3, 0], from: .hostToController)
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.connections.first?.peer == DeviceAddress(peerA, type: .random))
        #expect(trace.connections.first?.origin == .aclData(peerFromCreateConnection: true))
    }

    /// A connection attempt that ended (failed or cancelled) names nobody's link.
    @Test func aFailedCreateConnectionNamesNoLaterLink() throws {
        var script = CaptureScript()
        script.command(SyntheticHCI.leCreateConnection(peer: peerA, peerType: 1))
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x0FFF, peer: .zero, enhanced: true, status: 0x02))
        script.att(handle: 0x40, .readRequest, [3, 0], from: .hostToController)
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.connections.first?.peer == nil)
        #expect(trace.connections.first?.origin == .aclData(peerFromCreateConnection: false))
    }

    @Test func monitorControllersKeepTheirOwnConnectionsAndAddresses() throws {
        var zero = CaptureScript(controller: 0)
        zero.add(.monitor(opcode: 0), [0, 0] + localAddress.littleEndian + Array("hci0\0\0\0\0".utf8))
        zero.event(SyntheticHCI.leConnectionComplete(handle: 0x40, peer: peerA))
        var one = CaptureScript(start: zero.time, controller: 1)
        one.add(.monitor(opcode: 0), [0, 0] + peerA.littleEndian + Array("hci1\0\0\0\0".utf8))
        one.command(SyntheticHCI.command(0x2005, peerB.littleEndian))
        one.event(SyntheticHCI.leConnectionComplete(handle: 0x40, role: 1, peer: localAddress))
        one.att(handle: 0x40, .writeRequest, [3, 0, 1], from: .controllerToHost)
        zero.att(handle: 0x40, .writeRequest, [3, 0, 1], from: .hostToController)
        let packets = (zero.packets + one.packets).sorted { $0.timestamp < $1.timestamp }
        for bytes in [CaptureWriter.btsnoop(packets, datalink: 2001), CaptureWriter.pcap(packets, linktype: 254)] {
            let trace = try CaptureTrace.read(bytes: bytes)
            #expect(trace.controllers.map(\.index) == [0, 1])
            #expect(trace.controllers.map(\.publicAddress) == [localAddress, peerA])
            #expect(trace.controllers.map(\.kernelName) == ["hci0", "hci1"])
            #expect(trace.controllers[1].randomAddress == peerB)
            #expect(trace.connections.map(\.controller) == [0, 1])
            #expect(Set(trace.attPDUs.map(\.connection)) == [0, 1])
            #expect(trace.attPDUs.allSatisfy { $0.direction == .centralToPeripheral })
            // Deleting controller 1 ends its connection.
        }
    }

    @Test func deleteIndexAndResetEndConnections() throws {
        var script = CaptureScript(controller: 2)
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x40, peer: peerA))
        script.add(.monitor(opcode: 1), [])
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x41, peer: peerA))
        script.command(SyntheticHCI.command(0x0C03))
        let trace = try CaptureTrace.read(bytes: script.btsnoop(datalink: 2001))
        #expect(trace.connections.map { $0.closed?.frame } == [2, 4])
    }
}
