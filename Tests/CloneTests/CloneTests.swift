import BlueZ
import BlueZTestSupport
import Bluetooth
import DBus
import DBusTestSupport
import DeviceClone
import Foundation
import Profile
import Replica
import Testing

/// `gattemu clone`'s recorder and replica against the stand-in bluetoothd: what the device shows a central
/// comes back as a profile that validates and has the device's advertisement, GATT table, handles and values.
@Suite struct CloneTests {
    static let environment = EngineEnvironment(adapterAddress: BluetoothAddress("00:AA:01:01:00:01")!)

    @Test(.timeLimit(.minutes(5))) func aClonedDeviceBecomesAProfileWithItsAdvertisementTableHandlesAndValues() async throws {
        let rig = try await Rig([Lock.peripheral(), RemotePeripheral(address: "D0:1F:A6:00:00:02", name: "Other")])
        let recording = try await rig.record(Lock.name, listen: .milliseconds(400))
        #expect(recording.adapterName == "hci0")
        #expect(recording.advertisement.address?.description == Lock.address)

        // What the stand-in saw: every readable characteristic and descriptor read, then disconnected and forgotten.
        let device = try #require(rig.adapter.device(Lock.address))
        #expect(device.reads.count == 7, "TX's CCCD, session and its description, secret, status and its CCCD, broken: \(device.reads)")
        #expect(!device.isConnected && device.disconnectCalls == 1)
        #expect(rig.adapter.removedDevices == [device.path])
        #expect(!rig.adapter.isDiscovering)

        let replica = CloneReplica.make(recording)
        let result = ReplicaProfile(replica).build()
        let profile = try validated(result.text)

        // Advertisement: the name in the scan response, the rest as advertised, undecoded AD types kept.
        #expect(profile.deviceName(environment: Self.environment) == Lock.name)
        let advertisement = try #require(profile.advertisements(variant: nil, environment: Self.environment).first)
        #expect(advertisement.localName == Lock.name)
        #expect(advertisement.serviceUUIDs.map(\.description) == [Lock.service.lowercased()])
        #expect(advertisement.manufacturerData == [0xFFFF: [0x40, 0x02, 0x0A]])
        #expect(advertisement.data == [0x24: [0xAB]])

        // GATT table with the device's handles (value handles), properties and descriptors.
        #expect(profile.services.map { $0.uuid.description } == [Lock.service])
        #expect(profile.services.first?.handle == 0x0010)
        let characteristics = profile.characteristics
        #expect(characteristics.map(\.uuid.description) == [Lock.rx, Lock.tx, Lock.session, Lock.secret, Lock.status, Lock.broken])
        #expect(characteristics.map(\.handle) == Lock.valueHandles.map(Optional.some), "\(result.text)")
        #expect(characteristics[0].flags.map(\.rawValue) == ["write-without-response", "write"])
        #expect(characteristics[1].flags.contains(.notify) && characteristics[4].flags.contains(.indicate))
        #expect(characteristics[2].descriptors.map(\.uuid.description).contains { $0.hasPrefix("00002901") })
        #expect(characteristics[2].descriptors.first?.handle == 0x0018)
        #expect(result.text.contains("\"text\": \"Session\""), "the user description's value")

        // Values read; the one that wanted pairing needs encryption; the failed read is said, not invented.
        var engine = BehaviourEngine(profile: profile, environment: Self.environment)
        _ = engine.handle(.connect(CentralID(address: BluetoothAddress("F0:E0:D0:00:00:01")!)))
        #expect(engine.value(of: characteristics[2].id) == Lock.sessionValue)
        #expect(characteristics[3].flags.contains { $0.rawValue.hasPrefix("encrypt") }, "\(characteristics[3].flags)")
        #expect(engine.value(of: characteristics[3].id) != [0xEE], "a refused read has no value")
        let notes = replica.notes.joined(separator: "\n")
        #expect(notes.contains("read refused"), "\(notes)")
        #expect(notes.contains("read failed") && notes.contains("0x80"), "\(notes)")

        // --listen: both notification paths, everything that arrived, in order.
        let methods = Dictionary(uniqueKeysWithValues: recording.subscriptions.map { ($0.path.rawValue.suffix(8), $0.method) })
        #expect(methods == ["char0013": .acquireNotify, "char001b": .startNotify])
        let tx = try #require(device.characteristicPath(0x0013))
        let status = try #require(device.characteristicPath(0x001B))
        #expect(recording.notifications.filter { $0.path == tx }.map(\.value) == [[0x51, 0x60], [0x51, 0x61]])
        #expect(recording.notifications.filter { $0.path == status }.map(\.value) == [[0x02]])
        #expect(replica.conversation.contains { $0.kind == .notification(handle: 0x0014, value: [0x51, 0x61], indication: false) })
        #expect(replica.conversation.contains { $0.kind == .notification(handle: 0x001C, value: [0x02], indication: true) })
        // Each notification recorded is replayed once: on the subscription it followed, or from a trigger.
        var replayed: [[UInt8]] = []
        for id in [characteristics[1].id, characteristics[4].id] {
            replayed += engine.handle(.subscribe(characteristic: id, central: CentralID(address: BluetoothAddress("F0:E0:D0:00:00:01")!)))
                .notifications.map(
                    \.value)
        }
        replayed += profile.triggers.flatMap { engine.handle(.trigger($0.name, arguments: [:])).notifications.map(\.value) }
        #expect(replayed.sorted { $0.lexicographicallyPrecedes($1) } == [[0x02], [0x51, 0x60], [0x51, 0x61]], "\(result.text)")
    }

    /// BlueZ 5.82 names handles in `Handle` properties; the clone takes them from there.
    @Test(.timeLimit(.minutes(5))) func newerBlueZHandlesComeFromTheHandleProperty() async throws {
        let rig = try await Rig([Lock.peripheral()], configuration: .init(newerBlueZ: true))
        let recording = try await rig.record(Lock.address)
        #expect(recording.table.handleSource == .property)
        #expect(recording.table.characteristics.compactMap(\.valueHandle) == Lock.valueHandles)
        #expect(recording.table.characteristics.first?.mtu == 247)
        let profile = try validated(ReplicaProfile(CloneReplica.make(recording)).build().text)
        #expect(profile.characteristics.map(\.handle) == Lock.valueHandles.map(Optional.some))
    }

    /// A read that makes BlueZ pair (the device asked for encryption) gives the value and an encrypted read.
    @Test(.timeLimit(.minutes(5))) func aReadThatPairsIsRecordedAsNeedingEncryption() async throws {
        var lock = Lock.peripheral()
        lock.services[0].characteristics[2].pairsOnRead = true
        let rig = try await Rig([lock])
        let recording = try await rig.record(Lock.name)
        #expect(recording.pairedDuring)
        #expect(rig.adapter.removedDevices.count == 1, "the pairing BlueZ made is not left behind")
        let profile = try validated(ReplicaProfile(CloneReplica.make(recording)).build().text)
        let session = profile.characteristics[2]
        #expect(session.flags.contains { $0.rawValue.hasPrefix("encrypt") && $0.rawValue.hasSuffix("read") }, "\(session.flags)")
        var engine = BehaviourEngine(profile: profile, environment: Self.environment)
        _ = engine.handle(.connect(CentralID(address: BluetoothAddress("F0:E0:D0:00:00:01")!)))
        #expect(engine.value(of: session.id) == Lock.sessionValue)
    }

    /// A read whose answer bluetoothd never gives while it pairs with the device (a loaded bluetoothd: the pairing
    /// outlasted the call) is read again on the encrypted link: the value is the device's, not a refused read.
    @Test(.timeLimit(.minutes(5))) func aReadLostWhileBlueZPairedIsReadAgain() async throws {
        var lock = Lock.peripheral()
        lock.services[0].characteristics[2].onRead = .pairsWithoutAnswer
        let rig = try await Rig([lock])
        let recording = try await rig.record(Lock.name, readTimeout: .seconds(1))
        #expect(recording.pairedDuring)
        let session = try #require(recording.reads.first { $0.read.path.rawValue.hasSuffix("char0016") })
        guard case .value(let bytes, _) = session.read.outcome else {
            Issue.record("the session read: \(session.read.outcome)")
            return
        }
        #expect(bytes == Lock.sessionValue)
        #expect(session.read.pairedDuringRead)
        let profile = try validated(ReplicaProfile(CloneReplica.make(recording)).build().text)
        #expect(profile.characteristics[2].flags.contains { $0.rawValue.hasPrefix("encrypt") && $0.rawValue.hasSuffix("read") })
    }

    /// bluetoothd's ATT bearer goes while the link stays up (seen in the sandbox after BlueZ paired mid-walk: one
    /// read failed with ATT 0x0e, every later one "Not connected", `Connected` still true). Those reads are not the
    /// device's answers: the table is walked and read again on a new connection, and the recording has every value.
    /// A read that made BlueZ pair on the first connection still says the device asked for encryption.
    @Test(.timeLimit(.minutes(5))) func readsBluetoothdCouldNotSendAreMadeAgainOnANewConnection() async throws {
        var lock = Lock.peripheral()
        lock.services[0].characteristics[2].pairsOnRead = true  // session: BlueZ pairs on the first connection
        lock.services[0].characteristics[4].onRead = .losesTheBearer(times: 1)  // status, read after it
        let rig = try await Rig([lock])
        let recording = try await rig.record(Lock.name)
        let device = try #require(rig.adapter.device(Lock.address))
        #expect(device.connectCalls == 2)
        let outcomes = Dictionary(recording.reads.map { ($0.read.path.rawValue.suffix(17), $0.read.outcome) }) { $1 }
        #expect(recording.reads.count == 7, "every readable characteristic and every descriptor once: \(recording.reads)")
        #expect(outcomes["char0016/desc0018"] == .value(Array("Session".utf8), truncated: false))
        let session = try #require(recording.reads.first { $0.read.path.rawValue.hasSuffix("char0016") })
        #expect(session.read.outcome == .value(Lock.sessionValue, truncated: false))
        let failures = recording.reads.compactMap { read -> String? in
            if case .failed(let error) = read.read.outcome { return error.description } else { return nil }
        }
        #expect(failures.allSatisfy { !$0.contains("Not connected") && !$0.contains("0x0e") }, "\(failures)")
        #expect(recording.notes.contains { $0.contains("walked and read again") }, "\(recording.notes)")
        #expect(session.read.pairedDuringRead)
        let profile = try validated(ReplicaProfile(CloneReplica.make(recording)).build().text)
        #expect(profile.characteristics[2].flags.contains { $0.rawValue.hasPrefix("encrypt") && $0.rawValue.hasSuffix("read") })
        #expect(profile.characteristics[4].flags.contains(.read), "status was read on the second connection")
    }

    /// The same on every connection: an error naming what happened, not a clone missing the values.
    @Test(.timeLimit(.minutes(5))) func readsBluetoothdNeverSendsAreAnErrorNotAPartialClone() async throws {
        var lock = Lock.peripheral()
        lock.services[0].characteristics[2].onRead = .losesTheBearer(times: 5)
        let rig = try await Rig([lock])
        await #expect { try await rig.record(Lock.name) } throws: { error in
            "\(error)".hasPrefix("lost \(Lock.address) before the clone was complete: ")
                && "\(error)".contains("no answer from the device on 2 connections") && "\(error)".contains("Not connected")
        }
        #expect(rig.adapter.device(Lock.address)?.connectCalls == 2)
    }

    @Test(.timeLimit(.minutes(5)), arguments: [RemoteCharacteristic.ReadEffect.disconnects, .vanishes])
    func aDeviceLostMidWalkIsAnErrorNotAPartialClone(_ effect: RemoteCharacteristic.ReadEffect) async throws {
        var lock = Lock.peripheral()
        lock.services[0].characteristics[3].onRead = effect  // secret, the third characteristic read
        let rig = try await Rig([lock])
        do {
            _ = try await rig.record(Lock.name)
            Issue.record("a device lost mid-walk gave a recording")
        } catch let error as CentralError {
            guard case .lost = error else { throw error }
            let reason = effect == .vanishes ? "bluetoothd removed it" : "it disconnected"
            #expect(
                error.description == "lost \(Lock.address) before the clone was complete: \(reason) after 4 of 6 characteristics were read")
        }
    }

    @Test(.timeLimit(.minutes(5))) func findingAndConnectingErrorsSayWhatHappened() async throws {
        var refusing = Lock.peripheral(address: "D0:1F:A6:00:00:03", name: "Refusing")
        refusing.connecting = .fails(name: "org.bluez.Error.Failed", message: "le-connection-abort-by-local")
        var flaky = Lock.peripheral(address: "D0:1F:A6:00:00:04", name: "Flaky")
        flaky.connecting = .failsFirst(1)
        let rig = try await Rig([
            refusing, flaky, Lock.peripheral(address: "D0:1F:A6:00:00:05", name: "Twin"),
            Lock.peripheral(address: "D0:1F:A6:00:00:06", name: "Twin"),
        ])
        await #expect { try await rig.record("Refusing") } throws: { error in
            "\(error)" == "cannot connect to D0:1F:A6:00:00:03: org.bluez.Error.Failed: le-connection-abort-by-local (3 attempts)"
        }
        #expect(rig.adapter.device("D0:1F:A6:00:00:03")?.connectCalls == 3)
        let flakyRecording = try await rig.record("Flaky")
        #expect(flakyRecording.connectAttempt == 2)
        // A link that is up but announced 3 s late (a loaded bluetoothd): one attempt, not a dropped link and another
        // connection (failed before bluetoothd was asked after the 2 s grace: attempt 2 of a link that was up).
        var late = Lock.peripheral(address: "D0:1F:A6:00:00:07", name: "Late")
        late.connecting = .announcesLate(.seconds(3))
        let lateRig = try await Rig([late])
        let lateRecording = try await lateRig.record("Late")
        #expect(lateRecording.connectAttempt == 1)
        #expect(lateRig.adapter.device("D0:1F:A6:00:00:07")?.connectCalls == 1)
        // Both twins are announced again when the scan starts, each in its own time: a settle a slow machine cannot miss.
        await #expect { try await rig.record("Twin", settle: .seconds(3)) } throws: { error in
            "\(error)".hasPrefix("2 devices match named \"Twin\": D0:1F:A6:00:00:05 \"Twin\"")
        }
    }
}

/// What a hostile or broken bluetoothd (or device) hands a central is bounded where it enters: the clone
/// works, the profile validates, nothing grows with the input.
@Suite struct CloneHostileInputTests {
    static let address = "D0:1F:A6:00:00:66"

    static func hostile() -> RemotePeripheral {
        var device = RemotePeripheral(address: address, name: String(repeating: "N", count: 100_000))
        device.uuids = (0..<5_000).map { String(format: "%08x-0000-1000-8000-00805f9b34fb", 0x1000 + $0) }
        device.manufacturerData = Dictionary(uniqueKeysWithValues: (0..<500).map { (UInt16($0), [UInt8](repeating: 0xEE, count: 2_000)) })
        device.serviceData = ["0000180f-0000-1000-8000-00805f9b34fb": [UInt8](repeating: 0x64, count: 10_000), "not a uuid": [1]]
        device.advertisingFlags = [UInt8](repeating: 0x06, count: 100_000)
        device.advertisingData = Dictionary(
            uniqueKeysWithValues: (0..<255).map { (UInt8($0), [UInt8](repeating: UInt8($0), count: 1_000)) })
        device.extraProperties = [
            "Appearance": .uint32(0xFFFF_FFFF), "TxPower": .int64(.max), "RSSI": .string("loud"), "AddressType": .string("weird"),
            "Alias": .bytes([0x41]),
        ]
        var services = (0..<200).map { index in
            let handle = UInt16(0x0100 + index * 2)
            return RemoteService(
                uuid: String(format: "%04x", 0xA000 + index), handle: handle,
                characteristics: [
                    RemoteCharacteristic(
                        uuid: String(format: "%04x", 0x2A00 + index), flags: ["read"], handle: handle + 1, value: [UInt8(index & 0xFF)])
                ])
        }
        services[0].characteristics = [
            RemoteCharacteristic(
                uuid: "2a37", flags: ["read", "x\u{1B}[31m"] + (0..<10_000).map { "flag\($0)" }, handle: 0x0101,
                value: [UInt8](repeating: 0xAB, count: 100_000))
        ]
        services[1].characteristics.append(RemoteCharacteristic(uuid: "not-a-uuid", flags: ["read"], handle: 0x0104))
        services[2].handle = 0xFFFE
        services[2].characteristics = [RemoteCharacteristic(uuid: "2a99", flags: ["read", "notify"], handle: 0xFFFF, value: [9])]
        device.services = services
        return device
    }

    @Test(.timeLimit(.minutes(5))) func hugeListsLongStringsAndAbsurdNumbersAreBounded() async throws {
        let rig = try await Rig([Self.hostile()])
        let recording = try await rig.record(Self.address)
        let advertisement = recording.advertisement
        #expect(advertisement.name?.utf8.count == DeviceProperties.Limits.nameBytes)
        #expect(advertisement.serviceUUIDs.count == DeviceProperties.Limits.uuids)
        #expect(advertisement.manufacturerData.count == DeviceProperties.Limits.listEntries)
        #expect(advertisement.manufacturerData.values.allSatisfy { $0.count == DeviceProperties.Limits.structureBytes - 2 })
        #expect(advertisement.advertisingData?.count == DeviceProperties.Limits.listEntries)
        #expect(advertisement.advertisingFlags?.count == DeviceProperties.Limits.structureBytes)
        #expect(advertisement.appearance == nil && advertisement.txPower == nil && advertisement.rssi == nil)
        #expect(advertisement.addressType == nil && advertisement.alias == nil)
        #expect(!advertisement.discarded.isEmpty && advertisement.discarded.count <= DeviceProperties.Limits.discardedNotes)

        let table = recording.table
        #expect(table.services.count == RemoteGattTable.Limits.services)
        let first = try #require(table.characteristics.first)
        #expect(first.flags.bluezFlags.count <= RemoteGattTable.Limits.flags)
        #expect(!table.characteristics.contains { $0.uuid.description.contains("not") })
        #expect(table.notes.contains { $0.contains("without a valid UUID") }, "\(table.notes)")
        let big = try #require(recording.reads.first { $0.read.path == first.path })
        #expect(big.read.outcome == .value([UInt8](repeating: 0xAB, count: 512), truncated: true))

        let result = ReplicaProfile(CloneReplica.make(recording)).build()
        let profile = try validated(result.text)
        #expect(profile.services.count == RemoteGattTable.Limits.services)
        #expect(result.text.utf8.count < 200_000, "the profile does not grow with the input: \(result.text.utf8.count) bytes")
        let advertised = profile.advertisements(variant: nil, environment: CloneTests.environment)
        #expect(advertised.map(\.localName) == [String(repeating: "N", count: 29)], "the name shortened to what a scan response holds")
        #expect(profile.deviceName(environment: CloneTests.environment)?.utf8.count == DeviceProperties.Limits.nameBytes)
    }
}
