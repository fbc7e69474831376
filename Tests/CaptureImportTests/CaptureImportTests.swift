import Bluetooth
import Capture
import CaptureImport
import CaptureTestSupport
import Profile
import Replica
import Testing

/// A phone's session with a lock, written as HCI: advertising, connection, MTU exchange, discovery, a read
/// refused until pairing, a long read, a subscription, writes answered by notifications (one answered
/// differently the second time), a write command, a prepared (long) write, the device's own client request.
enum LockSession {
    static let lock = BluetoothAddress("C0:11:22:33:44:55")!
    static let serviceUUID = BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e")!
    static let commandUUID = BluetoothUUID("6e400002-b5a3-f393-e0a9-e50e24dcca9e")!
    static let statusUUID = BluetoothUUID("6e400003-b5a3-f393-e0a9-e50e24dcca9e")!
    static let kickUUID = BluetoothUUID("6e400004-b5a3-f393-e0a9-e50e24dcca9e")!
    static let longValue: [UInt8] = (0..<200).map { UInt8($0) }
    static let prepared: [UInt8] = (1...30).map { UInt8($0) }

    static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

    /// `phoneIsCentral`: HCI role 0 (the capturing phone connected).
    static func script(handle: UInt16 = 0x40, address: BluetoothAddress = lock, name: String = "TestLock", discover: Bool = true)
        -> CaptureScript
    {
        var s = CaptureScript()
        let advertising: [UInt8] =
            [2, 0x01, 0x06] + [UInt8(name.utf8.count + 1), 0x09] + Array(name.utf8)
            + [17, 0x07] + serviceUUID.littleEndian(compact: false)
        s.event(SyntheticHCI.legacyAdvertisingReports([(type: 0x00, addressType: 1, address: address, data: advertising, rssi: -50)]))
        s.event(
            SyntheticHCI.legacyAdvertisingReports([
                (type: 0x04, addressType: 1, address: address, data: [2, 0x0A, 0xF8, 5, 0xFF, 0x59, 0x00, 0x01, 0x02], rssi: -50)
            ]))
        s.command(SyntheticHCI.leCreateConnection(peer: address, peerType: 1))
        s.event(SyntheticHCI.leConnectionComplete(handle: handle, role: 0, peer: address, peerType: 1))
        let phone = HCIDirection.hostToController
        let device = HCIDirection.controllerToHost
        s.att(handle: handle, .exchangeMTURequest, le16(185), from: phone)
        s.att(handle: handle, .exchangeMTUResponse, le16(247), from: device)
        if discover {
            s.att(handle: handle, .readByGroupTypeRequest, [1, 0, 0xFF, 0xFF, 0x00, 0x28], from: phone)
            s.att(handle: handle, .readByGroupTypeResponse, [6] + le16(1) + le16(5) + [0x00, 0x18], from: device)
            s.att(handle: handle, .readByGroupTypeRequest, [6, 0, 0xFF, 0xFF, 0x00, 0x28], from: phone)
            s.att(
                handle: handle, .readByGroupTypeResponse, [20] + le16(10) + le16(0xFFFF) + serviceUUID.littleEndian(compact: false),
                from: device)
            // The device's own client looks at the phone's table meanwhile (not part of the device).
            s.att(handle: handle, .readByGroupTypeRequest, [1, 0, 0xFF, 0xFF, 0x00, 0x28], from: device)
            s.att(handle: handle, .readByGroupTypeResponse, [6] + le16(1) + le16(9) + [0x0F, 0x18], from: phone)
            s.att(handle: handle, .readByTypeRequest, [10, 0, 0xFF, 0xFF, 0x03, 0x28], from: phone)
            s.att(
                handle: handle, .readByTypeResponse,
                [21] + le16(11) + [0x18] + le16(12) + commandUUID.littleEndian(compact: false)
                    + le16(14) + [0x02] + le16(15) + statusUUID.littleEndian(compact: false), from: device)
            s.att(handle: handle, .readByTypeRequest, [15, 0, 0xFF, 0xFF, 0x03, 0x28], from: phone)
            s.att(
                handle: handle, .readByTypeResponse, [21] + le16(16) + [0x04] + le16(17) + kickUUID.littleEndian(compact: false),
                from: device)
            s.att(handle: handle, .readByTypeRequest, [17, 0, 0xFF, 0xFF, 0x03, 0x28], from: phone)
            s.att(handle: handle, .errorResponse, [0x08] + le16(17) + [0x0A], from: device)
            s.att(handle: handle, .findInformationRequest, le16(13) + le16(13), from: phone)
            s.att(handle: handle, .findInformationResponse, [1] + le16(13) + [0x02, 0x29], from: device)
            s.att(handle: handle, .findInformationRequest, le16(18) + le16(0xFFFF), from: phone)
            s.att(handle: handle, .findInformationResponse, [1] + le16(18) + [0x01, 0x29], from: device)
            s.att(handle: handle, .readRequest, le16(18), from: phone)
            s.att(handle: handle, .readResponse, Array("Kick".utf8), from: device)
        }
        // The status is refused until the link is encrypted; then read in two parts.
        s.att(handle: handle, .readRequest, le16(15), from: phone)
        s.att(handle: handle, .errorResponse, [0x0A] + le16(15) + [0x05], from: device)
        s.l2cap(handle: handle, channel: 6, [0x01, 0x04, 0x00, 0x01, 0x10, 0x07, 0x07], from: phone)
        s.l2cap(handle: handle, channel: 6, [0x02, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07], from: device)
        s.event(SyntheticHCI.encryptionChange(handle: handle))
        s.att(handle: handle, .readRequest, le16(15), from: phone)
        s.att(handle: handle, .readResponse, Array(longValue.prefix(184)), from: device)
        s.att(handle: handle, .readBlobRequest, le16(15) + le16(184), from: phone)
        s.att(handle: handle, .readBlobResponse, Array(longValue.dropFirst(184)), from: device)
        // Subscribe, then unlock twice: the lock answers with a counter.
        s.att(handle: handle, .writeRequest, le16(13) + [1, 0], from: phone)
        s.att(handle: handle, .writeResponse, [], from: device)
        for counter: UInt8 in [0, 1] {
            s.att(handle: handle, .writeRequest, le16(12) + [0x10, 0x01], from: phone)
            s.att(handle: handle, .writeResponse, [], from: device)
            s.time += 20_000
            s.att(handle: handle, .handleValueNotification, le16(12) + [0x90, counter], from: device)
        }
        s.att(handle: handle, .writeCommand, le16(17) + [0xAA], from: phone)
        s.att(handle: handle, .prepareWriteRequest, le16(12) + le16(0) + Array(prepared.prefix(18)), from: phone)
        s.att(handle: handle, .prepareWriteResponse, le16(12) + le16(0) + Array(prepared.prefix(18)), from: device)
        s.att(handle: handle, .prepareWriteRequest, le16(12) + le16(18) + Array(prepared.dropFirst(18)), from: phone)
        s.att(handle: handle, .prepareWriteResponse, le16(12) + le16(18) + Array(prepared.dropFirst(18)), from: device)
        s.att(handle: handle, .executeWriteRequest, [1], from: phone)
        s.att(handle: handle, .executeWriteResponse, [], from: device)
        s.att(handle: handle, .handleValueNotification, le16(12) + [0x91], from: device)
        s.event(SyntheticHCI.disconnectionComplete(handle: handle))
        return s
    }
}

@Suite struct CaptureImportTests {
    func trace(_ bytes: [UInt8]) throws -> CaptureTrace { try CaptureTrace.read(bytes: bytes) }

    func importOnly(_ trace: CaptureTrace) throws -> DeviceReplica {
        let choice = try CaptureImport.select(nil, in: trace)
        return CaptureImport.replica(of: choice, in: trace, source: "test.btsnoop")
    }

    @Test func reconstructsTheTableValuesAndAdvertisement() throws {
        let replica = try importOnly(try trace(LockSession.script().btsnoop()))
        #expect(replica.address == LockSession.lock)
        #expect(replica.addressType == .random)
        #expect(replica.name == "TestLock")
        #expect(replica.advertisingData?.localName == "TestLock")
        #expect(replica.scanResponse?.structures.count == 2)
        #expect(replica.advertisingProvenance?.contains("frame 1") == true)
        #expect(replica.mtu == 185)
        #expect(replica.services.map(\.uuid) == [.genericAccess, LockSession.serviceUUID])
        let service = replica.services[1]
        #expect(service.handle == 10 && service.endHandle == 0xFFFF)
        #expect(service.characteristics.map(\.uuid) == [LockSession.commandUUID, LockSession.statusUUID, LockSession.kickUUID])
        #expect(service.characteristics.map(\.valueHandle) == [12, 15, 17])
        let command = service.characteristics[0]
        let status = service.characteristics[1]
        let kick = service.characteristics[2]
        #expect(command.properties == [.write, .notify])
        #expect(command.descriptors.map(\.uuid) == [.clientCharacteristicConfiguration])
        #expect(command.value == [0x91])  // the latest notification
        #expect(status.value == LockSession.longValue)  // read in two parts, joined
        #expect(status.security.read == .encrypted)  // refused with insufficient authentication before pairing
        #expect(kick.descriptors.first?.uuid == .userDescription && kick.descriptors.first?.value == Array("Kick".utf8))
        #expect(replica.security.pairingSeen && replica.security.encrypted)
        #expect(replica.security.ioCapability == 3 && replica.security.bonding == true)
        // The device's own Read By Group Type of the phone's table did not become a service.
        #expect(!replica.services.contains { $0.uuid == BluetoothUUID(0x180F) })
        #expect(replica.notes.contains { $0.contains("phone's GATT server") })
    }

    @Test func reconstructsTheConversationInOrder() throws {
        let replica = try importOnly(try trace(LockSession.script().btsnoop()))
        let kinds = replica.conversation.map(\.kind)
        #expect(kinds.first == .connected(nil))
        #expect(kinds.last == .disconnected)
        #expect(kinds.contains(.error(handle: 15, request: .readRequest, code: .insufficientAuthentication)))
        #expect(kinds.contains(.read(handle: 15, offset: 0, value: LockSession.longValue)))
        let rest = kinds.drop { $0 != .subscribe(handle: 12, notify: true, indicate: false) }
        #expect(
            Array(rest.prefix(8)) == [
                .subscribe(handle: 12, notify: true, indicate: false),
                .write(handle: 12, value: [0x10, 0x01], withResponse: true),
                .notification(handle: 12, value: [0x90, 0], indication: false),
                .write(handle: 12, value: [0x10, 0x01], withResponse: true),
                .notification(handle: 12, value: [0x90, 1], indication: false),
                .write(handle: 17, value: [0xAA], withResponse: false),
                .write(handle: 12, value: LockSession.prepared, withResponse: true),
                .notification(handle: 12, value: [0x91], indication: false),
            ])
        // Times are seconds from the first record; the notification came 22 ms after its write.
        let writes = replica.conversation.filter { if case .write(12, [0x10, 0x01], _) = $0.kind { true } else { false } }
        let notified = replica.conversation.first { $0.kind == .notification(handle: 12, value: [0x90, 0], indication: false) }
        let gap = try #require(notified?.time) - (try #require(writes.first?.time))
        #expect(abs(gap - 0.022) < 0.0005)  // write, its response 1 ms later, 20 ms more, then the notification
    }

    @Test func theProfileValidatesPinsHandlesAndReplays() throws {
        let replica = try importOnly(try trace(LockSession.script().btsnoop()))
        let result = ReplicaProfile(replica).build()
        let diagnostics = ProfileValidator.validate(json: result.text, file: "lock.json")
        #expect(diagnostics.filter { $0.severity == .error }.isEmpty, "\(diagnostics)")
        let profile = try ProfileLoader.load(json: result.text, file: "lock.json")
        let service = try #require(profile.services.first { $0.uuid.description == LockSession.serviceUUID.description.lowercased() })
        #expect(service.handle == 10)
        #expect(service.characteristics.map(\.handle) == [12, 15, 17])
        #expect(result.text.contains("\"encrypt-read\""))
        #expect(result.text.contains("\"hex\": \"1001\""))
        #expect(result.text.contains("\"hex\": \"9000\"") && result.text.contains("\"hex\": \"9001\""))
        #expect(result.text.contains(Hex.string(LockSession.prepared)))
        // The pairing seen: the device's IO capability becomes the profile's security section.
        #expect(profile.security?.io == .noInputNoOutput && profile.security?.pairing == .accept)
    }

    @Test func everyContainerGivesTheSameReplica() throws {
        let script = LockSession.script()
        let reference = try importOnly(try trace(script.btsnoop()))
        let containers: [(String, [UInt8])] = [
            ("btsnoop 2001", script.btsnoop(datalink: 2001)),
            ("pcap 201", CaptureWriter.pcap(script.packets, linktype: 201)),
            ("pcap 254", CaptureWriter.pcap(script.packets, linktype: 254)),
            ("pcapng 201", CaptureWriter.pcapng(script.packets)),
            ("PacketLogger", script.packetLogger()),
            ("PacketLogger big-endian", script.packetLogger(bigEndian: true)),
        ]
        for (name, bytes) in containers {
            let replica = try importOnly(try trace(bytes))
            #expect(replica.services == reference.services, "\(name)")
            #expect(replica.conversation.map(\.kind) == reference.conversation.map(\.kind), "\(name)")
            #expect(replica.advertisingData == reference.advertisingData, "\(name)")
        }
    }

    @Test func aPhoneUsingItsCacheGetsCharacteristicsInferredFromHandles() throws {
        let replica = try importOnly(try trace(LockSession.script(discover: false).btsnoop()))
        let placeholder = try #require(replica.services.last)
        #expect(placeholder.characteristics.map(\.valueHandle) == [12, 15, 17])
        let command = placeholder.characteristics[0]
        #expect(command.properties == [.write, .notify])
        #expect(command.descriptors.map(\.handle) == [13])  // the client configuration, from the shape of its write
        #expect(placeholder.characteristics[1].properties == .read)
        #expect(placeholder.characteristics[1].security.read == .encrypted)
        #expect(placeholder.characteristics[2].properties == .writeWithoutResponse)
        #expect(replica.conversation.contains { $0.kind == .subscribe(handle: 12, notify: true, indicate: false) })
        #expect(replica.notes.contains { $0.contains("no service discovery") })
        let result = ReplicaProfile(replica).build()
        #expect(ProfileValidator.validate(json: result.text, file: "cached.json").filter { $0.severity == .error }.isEmpty)
    }

    @Test func severalDevicesNeedAChoice() throws {
        var combined = LockSession.script()
        let other = BluetoothAddress("D0:00:00:00:00:01")!
        let second = LockSession.script(handle: 0x41, address: other, name: "OtherLock")
        combined.packets += second.packets
        let trace = try trace(combined.btsnoop())
        #expect(CaptureImport.choices(in: trace).count == 2)
        #expect(throws: CaptureImport.SelectionError.self) { try CaptureImport.select(nil, in: trace) }
        do {
            _ = try CaptureImport.select(nil, in: trace)
        } catch {
            #expect("\(error)".contains("OtherLock") && "\(error)".contains("TestLock"))
        }
        #expect(try CaptureImport.select("otherlock", in: trace).address?.address == other)
        #expect(try CaptureImport.select("C0:11:22:33:44:55", in: trace).address?.address == LockSession.lock)
        #expect(try CaptureImport.select("Test", in: trace).address?.address == LockSession.lock)
        #expect(throws: CaptureImport.SelectionError.self) { try CaptureImport.select("nothing", in: trace) }
        let replica = CaptureImport.replica(of: try CaptureImport.select("OtherLock", in: trace), in: trace, source: "two")
        #expect(replica.name == "OtherLock")
        #expect(replica.conversation.allSatisfy { $0.connection == 1 })
    }

    /// An iPhone's log often starts with links already open (no connection event, no address): such a peer is
    /// chosen by its connection, as the list names it.
    @Test func aPeerWithNoAddressIsChosenByItsConnection() throws {
        var script = CaptureScript()
        for handle: UInt16 in [0x40, 0x41] {
            script.att(handle: handle, .writeCommand, [0x12, 0, UInt8(handle)], from: .hostToController)
            script.att(handle: handle, .handleValueNotification, [0x14, 0, UInt8(handle)], from: .controllerToHost)
        }
        let trace = try trace(script.packetLogger())
        let choices = CaptureImport.choices(in: trace)
        #expect(choices.map(\.address) == [nil, nil])
        #expect(
            choices.map(\.description)
                == (0..<2).map {
                    "an unknown peer (connection \($0), HCI handle 0x004\($0)): 1 connection, 2 ATT PDUs, 0 advertising reports"
                })
        do {
            _ = try CaptureImport.select(nil, in: trace)
            Issue.record("two peers and no choice: must be refused")
        } catch {
            #expect("\(error)".contains("--device ADDRESS|NAME|'connection N'"))
        }
        for id in 0..<2 {
            let choice = try CaptureImport.select("connection \(id)", in: trace)
            #expect(choice.connections == [id])
            let replica = CaptureImport.replica(of: choice, in: trace, source: "iphone.pklg")
            // Frames 1-2 are the first link's write and notification, 3-4 the second's.
            let frames = Set(replica.conversation.compactMap(\.frame))
            #expect(!frames.isEmpty && frames.isSubset(of: [2 * id + 1, 2 * id + 2]), "\(frames)")
        }
        #expect(try CaptureImport.select("Connection 1", in: trace).connections == [1])
        for wanted in ["connection 2", "connection", "connection -1", "connection 99999999999999999999"] {
            #expect(throws: CaptureImport.SelectionError.self, "\(wanted)") { try CaptureImport.select(wanted, in: trace) }
        }
    }

    /// A link made up from its first ACL data opens in the frame of that data: the phone's first write comes after
    /// the connection, so the device's answer to it is the write's answer, not an unsolicited notification (a real
    /// iPhone log of a printer replayed its first answer only on a trigger).
    @Test func theFirstWriteOnALinkWithNoConnectionEventKeepsItsAnswer() throws {
        var script = CaptureScript()
        script.att(handle: 0x4E, .writeCommand, [0x12, 0, 0x10, 0xFF], from: .hostToController)
        script.att(handle: 0x4E, .handleValueNotification, [0x0F, 0, 0x4F, 0x4B], from: .controllerToHost)
        let trace = try trace(script.packetLogger())
        let replica = try importOnly(trace)
        #expect(
            replica.conversation.map(\.kind) == [
                .connected(nil), .write(handle: 0x12, value: [0x10, 0xFF], withResponse: false),
                .notification(handle: 0x0F, value: [0x4F, 0x4B], indication: false),
            ])
        let result = ReplicaProfile(replica).build()
        #expect(!result.text.contains("unsolicited"), "\(result.text)")
        #expect(result.text.contains("\"hex\": \"4f4b\""))
    }

    /// A device's name is the device's text: in the list of choices it cannot start a line of its own or carry a
    /// terminal control (a line feed in a name made `gattemu import` print a line the capture wrote).
    @Test func choicesShowNamesAsTextOfOneLine() throws {
        var combined = LockSession.script()
        let evil = "Lock\nimport: OK, nothing to see\u{1B}[2J"
        combined.packets += LockSession.script(handle: 0x41, address: BluetoothAddress("D0:00:00:00:00:01")!, name: evil).packets
        let trace = try trace(combined.btsnoop())
        do {
            _ = try CaptureImport.select(nil, in: trace)
            Issue.record("two devices need a choice")
        } catch {
            let lines = "\(error)".split(separator: "\n")
            #expect(lines.count == 3, "a header and one line a device: \(lines)")
            #expect(!"\(error)".unicodeScalars.contains("\u{1B}"))
            #expect("\(error)".contains(#"Lock\nimport: OK"#))
        }
    }

    /// `gattemu import` reads twice: a survey to choose the device, then only that device's traffic. The replica
    /// is the one a whole trace gives; the memory is the chosen device's.
    @Test func theTwoPassImportKeepsOnlyTheChosenDevice() throws {
        var combined = LockSession.script()
        combined.packets += LockSession.script(handle: 0x41, address: BluetoothAddress("D0:00:00:00:00:01")!, name: "OtherLock").packets
        let bytes = combined.btsnoop()
        let whole = try trace(bytes)
        let survey = try CaptureTrace.read(bytes: bytes, scope: .survey)
        #expect(survey.attPDUs.isEmpty && survey.smpPDUs.isEmpty && survey.signalling.isEmpty)
        #expect(survey.attPDUCounts == whole.attPDUCounts && survey.attPDUCounts.values.reduce(0, +) == whole.attPDUs.count)
        #expect(CaptureImport.choices(in: survey) == CaptureImport.choices(in: whole), "names read over GATT are kept for the choice")
        for name in ["TestLock", "OtherLock"] {
            let choice = try CaptureImport.select(name, in: survey)
            #expect(choice == (try CaptureImport.select(name, in: whole)))
            let scoped = try CaptureTrace.read(bytes: bytes, scope: CaptureImport.scope(for: choice, in: survey))
            #expect(!scoped.attPDUs.isEmpty && scoped.attPDUs.allSatisfy { choice.connections.contains($0.connection) })
            #expect(scoped.attPDUs.count < whole.attPDUs.count)
            #expect(scoped.advertisers.allSatisfy { $0.address == choice.address })
            let fromScoped = ReplicaProfile(CaptureImport.replica(of: choice, in: scoped, source: "two")).build()
            let fromWhole = ReplicaProfile(CaptureImport.replica(of: choice, in: whole, source: "two")).build()
            #expect(fromScoped.text == fromWhole.text && fromScoped.text.contains(name), "\(name)")
        }
    }

    @Test func aDamagedCaptureImportsWhatIsComplete() throws {
        let bytes = LockSession.script().btsnoop()
        // Cut the file in the middle of a record, after the first writes.
        for cut in stride(from: bytes.count - 1, to: bytes.count * 2 / 3, by: -37) {
            let trace = try trace(Array(bytes.prefix(cut)))
            let replica = try importOnly(trace)
            #expect(replica.services.count == 2)
            #expect(replica.notes.contains { $0.contains("damaged") } || trace.problemCount == 0)
            let result = ReplicaProfile(replica).build()
            #expect(ProfileValidator.validate(json: result.text, file: "cut.json").filter { $0.severity == .error }.isEmpty)
        }
        // Nothing but advertising and no connection: nothing to import without a choice.
        #expect(throws: CaptureImport.SelectionError.self) {
            try CaptureImport.select(nil, in: try CaptureTrace.read(bytes: CaptureScript().btsnoop()))
        }
    }

    @Test func hostilePreparedWritesStayBounded() throws {
        var s = CaptureScript()
        s.event(SyntheticHCI.leConnectionComplete(handle: 0x40, peer: LockSession.lock))
        // Offsets past 512, a write reaching past 512, and more queued handles than any device allows.
        s.att(handle: 0x40, .prepareWriteRequest, LockSession.le16(12) + LockSession.le16(0xFFFF) + [1, 2, 3], from: .hostToController)
        s.att(
            handle: 0x40, .prepareWriteRequest, LockSession.le16(12) + LockSession.le16(500) + [UInt8](repeating: 7, count: 40),
            from: .hostToController)
        for handle in UInt16(100)..<200 {
            s.att(handle: 0x40, .prepareWriteRequest, LockSession.le16(handle) + LockSession.le16(0) + [1], from: .hostToController)
        }
        s.att(handle: 0x40, .executeWriteRequest, [1], from: .hostToController)
        s.att(handle: 0x40, .executeWriteResponse, [], from: .controllerToHost)
        let replica = try importOnly(try trace(s.btsnoop()))
        let writes = replica.conversation.compactMap { event -> (AttributeHandle, Int)? in
            if case .write(let handle, let value, _) = event.kind { (handle, value.count) } else { nil }
        }
        #expect(writes.count == 64)
        #expect(writes.first.map { $0 == (12, 512) } == true)
    }
}

/// A Bluetooth 5 device the phone found by extended advertising: the profile advertises it so (issue 45).
@Suite struct ExtendedAdvertisingImportTests {
    static let device = BluetoothAddress("C0:11:22:33:44:66")!

    static func capture(secondaryPHY: UInt8, eventType: UInt16) -> CaptureScript {
        var s = CaptureScript()
        let name = Array("Ranger".utf8)
        let maker = [UInt8](repeating: 0x5A, count: 100)
        let data: [UInt8] = [2, 0x01, 0x06] + [UInt8(name.count + 1), 0x09] + name + [UInt8(maker.count + 3), 0xFF, 0x59, 0x00] + maker
        s.event(
            SyntheticHCI.extendedAdvertisingReport(
                eventType: eventType, address: device, data: data, sid: 1, primaryPHY: secondaryPHY == 3 ? 3 : 1, secondaryPHY: secondaryPHY
            ))
        s.command(SyntheticHCI.leCreateConnection(peer: device, peerType: 1))
        s.event(SyntheticHCI.leConnectionComplete(handle: 0x41, role: 0, peer: device, peerType: 1))
        s.att(handle: 0x41, .readRequest, LockSession.le16(3), from: .hostToController)
        s.att(handle: 0x41, .readResponse, Array("Ranger".utf8), from: .controllerToHost)
        s.event(SyntheticHCI.disconnectionComplete(handle: 0x41))
        return s
    }

    @Test func anExtendedAdvertisementIsImportedOnItsSecondaryChannel() throws {
        let trace = try CaptureTrace.read(bytes: Self.capture(secondaryPHY: 2, eventType: 0x01).btsnoop())
        let report = try #require(trace.advertisers.first?.advertisingData)
        #expect(report.primaryPHY == 1 && report.secondaryPHY == 2 && report.secondaryChannel == .twoM)
        let replica = CaptureImport.replica(of: try CaptureImport.select(nil, in: trace), in: trace, source: "ranger.btsnoop")
        #expect(replica.secondaryChannel == .twoM)
        let result = ReplicaProfile(replica).build()
        let profile = try ProfileLoader.load(json: result.text, file: "ranger.json")
        let advertisement = try #require(profile.advertisements.first)
        #expect(advertisement.fields.secondaryChannel == .twoM)
        #expect(advertisement.fields.manufacturerData?[0x0059] != nil, "the 100 bytes are kept: \(result.report)")
        #expect(result.report.contains { $0.contains("extended advertising on the 2M secondary PHY") }, "\(result.report)")
    }

    @Test func aLegacyAdvertisementStaysLegacy() throws {
        // Legacy PDUs in an extended report (bit 4): no secondary channel, whatever the PHY bytes.
        let trace = try CaptureTrace.read(bytes: Self.capture(secondaryPHY: 0, eventType: 0x13).btsnoop())
        let report = try #require(trace.advertisers.first?.advertisingData)
        #expect(report.secondaryChannel == nil)
        let replica = CaptureImport.replica(of: try CaptureImport.select(nil, in: trace), in: trace, source: "legacy.btsnoop")
        #expect(replica.secondaryChannel == nil)
        let result = ReplicaProfile(replica).build()
        #expect(result.report.contains { $0.contains("does not fit the 31 bytes") }, "legacy: the 100 bytes do not fit")
        #expect(try ProfileLoader.load(json: result.text, file: "legacy.json").advertisements.first?.fields.secondaryChannel == nil)
    }
}
