import Bluetooth
import Profile
import Replica
import Testing

/// A recording of a Noke-like lock, as an importer or a clone would produce it.
enum Recordings {
    static let service = BluetoothUUID("1bc50001-0200-d29e-e511-446c609db825")!
    static let rx = BluetoothUUID("1bc50002-0200-d29e-e511-446c609db825")!
    static let tx = BluetoothUUID("1bc50003-0200-d29e-e511-446c609db825")!
    static let session = BluetoothUUID("1bc50004-0200-d29e-e511-446c609db825")!
    static let unlock: [UInt8] = [0x00, 0x00, 0xC2, 0x00] + Array(repeating: 0x11, count: 16)
    static let answer: [UInt8] = [0x51, 0x60, 0xC2] + Array(repeating: 0, count: 17)
    static let sessionValue: [UInt8] = Array(0..<20)

    static func lock() -> DeviceReplica {
        var replica = DeviceReplica(source: "capture test.btsnoop")
        replica.address = BluetoothAddress("D0:1F:A6:44:B3:6F")
        replica.addressType = .public
        replica.name = "NOKE3E_D01FA644B36F"
        replica.advertisingData = AdvertisingData([
            ADStructure(type: .flags, data: [0x06]),
            ADStructure(type: .completeServiceUUIDs128, data: service.littleEndian(compact: false)),
            ADStructure(type: .manufacturerData, data: [0xFF, 0xFF, 0x40, 0x02, 0x0A, 0x00, 0x00]),
        ])
        replica.scanResponse = AdvertisingData([ADStructure(type: .completeLocalName, data: Array("NOKE3E_D01FA644B36F".utf8))])
        var lock = DeviceReplica.Service(uuid: service, handle: 0x0010, endHandle: 0x0018)
        var write = DeviceReplica.Characteristic(
            uuid: rx, properties: [.write, .writeWithoutResponse], declarationHandle: 0x0011, valueHandle: 0x0012)
        write.provenance = "frame 40"
        var notify = DeviceReplica.Characteristic(uuid: tx, properties: [.read, .notify], declarationHandle: 0x0013, valueHandle: 0x0014)
        notify.descriptors = [
            DeviceReplica.Descriptor(uuid: .clientCharacteristicConfiguration, handle: 0x0015),
            DeviceReplica.Descriptor(uuid: .userDescription, handle: 0x0016, value: Array("TX".utf8)),
        ]
        var read = DeviceReplica.Characteristic(uuid: session, properties: [.read], declarationHandle: 0x0017, valueHandle: 0x0018)
        read.value = sessionValue
        lock.characteristics = [write, notify, read]
        replica.services = [DeviceReplica.Service(uuid: .genericAccess, handle: 1, endHandle: 5), lock]
        replica.mtu = 247
        replica.conversation = [
            .init(.connected(BluetoothAddress("F0:E0:D0:00:00:01")), time: 1.0, frame: 30),
            .init(.read(handle: 0x0018, offset: 0, value: sessionValue), time: 1.2, frame: 50),
            .init(.subscribe(handle: 0x0014, notify: true, indicate: false), time: 1.3, frame: 52),
            .init(.write(handle: 0x0012, value: unlock, withResponse: true), time: 1.4, frame: 54),
            .init(.notification(handle: 0x0014, value: answer, indication: false), time: 1.45, frame: 56),
            // A counter: the same command answered differently the next two times.
            .init(.write(handle: 0x0012, value: [0x01], withResponse: false), time: 2.0, frame: 60),
            .init(.notification(handle: 0x0014, value: [0x51, 0x01], indication: false), time: 2.1, frame: 61),
            .init(.write(handle: 0x0012, value: [0x01], withResponse: false), time: 3.0, frame: 70),
            .init(.notification(handle: 0x0014, value: [0x51, 0x02], indication: false), time: 3.1, frame: 71),
            .init(.disconnected, time: 4.0, frame: 80),
            // Unsolicited: a notification in a later connection with no write before it.
            .init(.connected(nil), time: 5.0, frame: 90, connection: 2),
            .init(.notification(handle: 0x0014, value: [0x50, 0x00], indication: false), time: 5.5, frame: 95, connection: 2),
        ]
        return replica
    }
}

@Suite struct ReplicaProfileTests {
    static func load(_ result: ReplicaProfile.Result) throws -> DeviceProfile {
        do {
            return try ProfileLoader.load(json: result.text, file: "imported.json")
        } catch {
            Issue.record("the generated profile does not validate:\n\(error)\n\(result.text)")
            throw error
        }
    }

    @Test func aRecordingBecomesAValidProfileThatReplaysIt() throws {
        var options = ReplicaProfile.Options()
        options.timing = .recorded
        let result = ReplicaProfile(Recordings.lock(), options: options).build()
        let profile = try Self.load(result)
        // GATT table (GAP left to BlueZ), values, descriptors.
        #expect(profile.services.map(\.uuid) == [Recordings.service])
        let characteristics = profile.characteristics
        #expect(characteristics.map(\.uuid) == [Recordings.rx, Recordings.tx, Recordings.session])
        #expect(characteristics[0].flags.map(\.rawValue) == ["write-without-response", "write"])
        #expect(result.text.contains("\"text\": \"TX\""))
        #expect(!result.text.contains("2902"), "BlueZ adds the client configuration itself")
        #expect(profile.advertisements.count == 1)

        var engine = BehaviourEngine(
            profile: profile, environment: EngineEnvironment(adapterAddress: BluetoothAddress("D0:1F:A6:44:B3:6F")!))
        let central = CentralID(address: BluetoothAddress("F0:E0:D0:00:00:01")!)
        let ids = characteristics.map(\.id)
        _ = engine.handle(.connect(central))
        #expect(engine.value(of: ids[2]) == Recordings.sessionValue)
        _ = engine.handle(.subscribe(characteristic: ids[1], central: central))
        let unlocked = engine.handle(.write(characteristic: ids[0], central: central, value: Recordings.unlock, withResponse: true))
        #expect(unlocked.notifications.map(\.value) == [Recordings.answer])
        #expect(unlocked.effects.contains(.delay(.milliseconds(50))), "the recorded gap")
        // The counter-like write replays in order, then repeats the last answer.
        let answers = (0..<3).map { _ in
            engine.handle(.write(characteristic: ids[0], central: central, value: [0x01], withResponse: false)).notifications.map(\.value)
        }
        #expect(answers == [[[0x51, 0x01]], [[0x51, 0x02]], [[0x51, 0x02]]])
        // An unrecorded write is logged and otherwise ignored.
        let unknown = engine.handle(.write(characteristic: ids[0], central: central, value: [9, 9], withResponse: true))
        #expect(unknown.notifications.isEmpty)
        #expect(unknown.effects.contains { if case .log(let text) = $0 { text.contains("unrecorded") } else { false } })
        // The unsolicited notification is a trigger.
        #expect(profile.triggers.map(\.name).count == 1)
        let fired = engine.handle(.trigger(profile.triggers[0].name, arguments: [:]))
        #expect(fired.notifications.map(\.value) == [[0x50, 0x00]])
        #expect(result.report.contains { $0.contains("triggers") })
        #expect(result.report.contains { $0.contains("MTU 247") })
    }

    /// A capture whose include declaration names its own service (the capture fuzz target: "a service cannot include
    /// itself", and `gattemu import` wrote a profile that does not load): the include is left out and said so,
    /// the profile loads, and the handles are not pinned (the declaration took a handle the profile cannot give).
    @Test func aServiceThatIncludesItselfGivesAProfileThatLoads() throws {
        var replica = Recordings.lock()
        let start = try #require(replica.services[1].handle)  // the lock's service (GAP's is BlueZ's own)
        replica.services[1].includes = [start, start]
        let result = ReplicaProfile(replica).build()
        let profile = try Self.load(result)
        #expect(profile.services.allSatisfy { $0.includes.isEmpty })
        #expect(result.report.contains { $0.contains("include of itself") })
        #expect(result.report.contains { $0.contains("handles not pinned") && $0.contains("includes itself") })
    }

    /// Thousands of services, each including the next (a hostile capture or clone can hold that many): building
    /// the profile looked the includes up against every service once per service, and 8,000 took 481 s in a debug
    /// build; once, it takes under two seconds. Were the quadratic work back, the test would fail its time limit
    /// (once it ends: Swift Testing does not interrupt synchronous code).
    @Test(.timeLimit(.minutes(3))) func thousandsOfServicesWithIncludesBuildPromptly() throws {
        let count = 8_000
        var replica = DeviceReplica(source: "many services")
        for index in 0..<count {
            var service = DeviceReplica.Service(
                uuid: BluetoothUUID(UInt16(0xA000 + index % 1_000)), handle: AttributeHandle(rawValue: UInt16(1 + index * 8)),
                endHandle: AttributeHandle(rawValue: UInt16(8 + index * 8)))
            service.includes = [AttributeHandle(rawValue: UInt16(1 + (index + 1) % count * 8))]
            replica.services.append(service)
        }
        let result = ReplicaProfile(replica).build()
        guard let services = result.json["services"]?.arrayItems else {
            Issue.record("no services in \(result.text.prefix(300))")
            return
        }
        #expect(services.count == count)
        #expect(result.text.components(separatedBy: "\"includes\"").count - 1 == count)
    }

    /// One service of `count` characteristics (value handles 3, 5, 7…), all with `uuid` or each its own.
    static func manyCharacteristics(_ count: Int, uuid: BluetoothUUID? = nil) -> DeviceReplica {
        var replica = DeviceReplica(source: "many characteristics")
        var service = DeviceReplica.Service(
            uuid: BluetoothUUID(0xA000), handle: 1, endHandle: AttributeHandle(rawValue: UInt16(1 + 2 * count)))
        for index in 0..<count {
            service.characteristics.append(
                DeviceReplica.Characteristic(
                    uuid: uuid ?? BluetoothUUID(UInt16(0xB000 + index)), properties: [.write],
                    declarationHandle: AttributeHandle(rawValue: UInt16(2 + 2 * index)),
                    valueHandle: AttributeHandle(rawValue: UInt16(3 + 2 * index))))
        }
        replica.services = [service]
        return replica
    }

    /// Thousands of characteristics and a long conversation: whether each is written looked through the whole
    /// conversation once per characteristic; 4,000 characteristics and 40,000 events took 51 s in a debug build,
    /// 8,000 and 80,000 several minutes. Now a set made in one pass.
    @Test(.timeLimit(.minutes(3))) func manyCharacteristicsAndALongConversationBuildPromptly() {
        var replica = Self.manyCharacteristics(8_000)
        for index in 0..<80_000 {
            replica.conversation.append(DeviceReplica.Event(.read(handle: 0xFFF0, offset: 0, value: [UInt8(index & 0xFF)]), frame: index))
        }
        replica.conversation.append(DeviceReplica.Event(.write(handle: 5, value: [1], withResponse: true), frame: 80_000))
        let text = ReplicaProfile(replica).build().text
        #expect(text.components(separatedBy: "\"storeWrites\"").count - 1 == 1)
    }

    /// Thousands of characteristics sharing a UUID: each id tried every suffix from _2 on, and 16,000 took 136 s
    /// in a debug build; the next suffix is now remembered per name.
    @Test(.timeLimit(.minutes(3))) func thousandsOfCharacteristicsSharingAUUIDBuildPromptly() {
        let replica = Self.manyCharacteristics(16_000, uuid: Recordings.rx)
        let text = ReplicaProfile(replica).build().text
        #expect(text.contains("\"char_1bc50002\""))
        #expect(text.contains("\"char_1bc50002_16000\""))
        #expect(!text.contains("\"char_1bc50002_16001\""))
    }

    /// Thousands of writes, then thousands of refused prepared writes to another characteristic: each refusal
    /// looked back through every write for its own; 20,000 of each took 129 s in a debug build. Now a dictionary.
    @Test(.timeLimit(.minutes(3))) func thousandsOfRefusedWritesBuildPromptly() {
        var replica = Self.manyCharacteristics(2)
        for index in 0..<20_000 {
            replica.conversation.append(
                DeviceReplica.Event(.write(handle: 3, value: [UInt8(index & 0xFF), UInt8(index >> 8)], withResponse: true), frame: index))
        }
        for index in 0..<20_000 {
            replica.conversation.append(
                DeviceReplica.Event(
                    .error(handle: 5, request: .prepareWriteRequest, code: ATTErrorCode(rawValue: 0x0E)), frame: 20_000 + index))
        }
        let result = ReplicaProfile(replica).build()
        #expect(result.report.contains { $0.contains("rules past the limit") })
    }

    /// A characteristic with thousands of descriptors: checking that BlueZ would lay them out as recorded searched
    /// them all for each; 16,000 took 51 s in a debug build, 32,000 several minutes. Now a set.
    @Test(.timeLimit(.minutes(3))) func thousandsOfDescriptorsBuildPromptly() {
        var replica = DeviceReplica(source: "many descriptors")
        let count = 32_000
        var service = DeviceReplica.Service(uuid: BluetoothUUID(0xA000), handle: 1, endHandle: AttributeHandle(rawValue: UInt16(3 + count)))
        var characteristic = DeviceReplica.Characteristic(
            uuid: BluetoothUUID(0xB000), properties: [.read], declarationHandle: 2, valueHandle: 3)
        for index in 0..<count {
            characteristic.descriptors.append(
                DeviceReplica.Descriptor(
                    uuid: BluetoothUUID(UInt16(0xC000 + index % 4)), handle: AttributeHandle(rawValue: UInt16(4 + index))))
        }
        service.characteristics = [characteristic]
        replica.services = [service]
        let result = ReplicaProfile(replica).build()
        #expect(!result.report.contains { $0.contains("handles not pinned") })
        #expect(result.text.contains("\"handle\": \(3 + count)") || result.text.contains("\"handle\":\(3 + count)"))
    }

    /// A read the device refused with an ATT error is refused the same way by the profile (a relay or a capture
    /// saw it); reads that were answered and refused in turn are replayed in that order. Refusals for security
    /// are the flags' business and make no rule.
    @Test func refusedReadsAreReplayedAsRefusals() throws {
        let connected = DeviceReplica.Event(.connected(BluetoothAddress("F0:E0:D0:00:00:01")), time: 1.0)
        let central = CentralID(address: BluetoothAddress("F0:E0:D0:00:00:01")!)
        func engine(_ events: [DeviceReplica.Event]) throws -> (BehaviourEngine, CharacteristicID) {
            var replica = Recordings.lock()
            replica.conversation = [connected] + events
            let profile = try Self.load(ReplicaProfile(replica).build())
            var engine = BehaviourEngine(
                profile: profile, environment: EngineEnvironment(adapterAddress: BluetoothAddress("D0:1F:A6:44:B3:6F")!))
            _ = engine.handle(.connect(central))
            return (engine, profile.characteristics[2].id)
        }
        let refused = DeviceReplica.Event(.error(handle: 0x0018, request: .readRequest, code: ATTErrorCode(rawValue: 0x85)), time: 1.1)
        var (always, session) = try engine([refused, refused])
        for _ in 0..<3 {
            #expect(always.handle(.read(characteristic: session, central: central, offset: 0)).reply == .error(.application(0x85)))
        }
        let answered = DeviceReplica.Event(.read(handle: 0x0018, offset: 0, value: [7]), time: 1.2)
        var (turns, id) = try engine([answered, refused, answered])
        let replies = (0..<4).map { _ in turns.handle(.read(characteristic: id, central: central, offset: 0)).reply }
        #expect(replies == [.value([7]), .error(.application(0x85)), .value([7]), .value([7])])
        let security = DeviceReplica.Event(.error(handle: 0x0018, request: .readRequest, code: .insufficientEncryption), time: 1.1)
        var (secured, sessionID) = try engine([security])
        #expect(secured.handle(.read(characteristic: sessionID, central: central, offset: 0)).reply == nil, "no rule: the value answers")
        // Each code as the error that makes BlueZ send it (ATTError(sending:)); an unlikely error, which no BlueZ
        // application can send, as `failed`.
        let codes: [(UInt8, ATTError)] = [
            (0x9C, .application(0x9C)), (0xFE, .inProgress), (0x0E, .failed), (0x02, .notPermitted),
            (0x07, .invalidOffset), (0x0D, .invalidValueLength), (0x06, .notSupported),
        ]
        for (code, error) in codes {
            let event = DeviceReplica.Event(.error(handle: 0x0018, request: .readRequest, code: ATTErrorCode(rawValue: code)), time: 1.1)
            var (replay, characteristic) = try engine([event])
            #expect(replay.handle(.read(characteristic: characteristic, central: central, offset: 0)).reply == .error(error), "0x\(code)")
        }
    }

    /// A treadmill sends its live data every second between the app's commands (a real capture: 127 notifications
    /// after one write): the write replays all of them, in order.
    @Test func aWriteFollowedByALongStreamReplaysAllOfIt() throws {
        var replica = Recordings.lock()
        let stream = (0..<300).map { i in [UInt8(0x55), UInt8(i & 0xFF), UInt8(i >> 8)] + Array(repeating: 0, count: 17) }
        replica.conversation =
            [
                .init(.connected(BluetoothAddress("F0:E0:D0:00:00:01")), time: 1.0, frame: 30),
                .init(.subscribe(handle: 0x0014, notify: true, indicate: false), time: 1.3, frame: 52),
                .init(.write(handle: 0x0012, value: Recordings.unlock, withResponse: true), time: 1.4, frame: 54),
            ]
            + stream.enumerated().map { i, value in
                .init(.notification(handle: 0x0014, value: value, indication: false), time: 1.5 + Double(i), frame: 60 + i)
            }
        let result = ReplicaProfile(replica).build()
        let profile = try Self.load(result)
        var engine = BehaviourEngine(
            profile: profile, environment: EngineEnvironment(adapterAddress: BluetoothAddress("D0:1F:A6:44:B3:6F")!))
        let central = CentralID(address: BluetoothAddress("F0:E0:D0:00:00:01")!)
        let ids = profile.characteristics.map(\.id)
        _ = engine.handle(.connect(central))
        _ = engine.handle(.subscribe(characteristic: ids[1], central: central))
        let answered = engine.handle(.write(characteristic: ids[0], central: central, value: Recordings.unlock, withResponse: true))
        #expect(answered.notifications.map(\.value) == stream)
        #expect(!result.report.contains { $0.contains("replay the first") }, "\(result.report)")
    }

    /// What does not fit in a profile (16 MiB) is left out, said so, and the profile still loads.
    @Test func aRecordingTooBigForAProfileIsCutAndStillLoads() throws {
        var replica = Recordings.lock()
        let big = Array(repeating: UInt8(0xAB), count: 511)
        var conversation: [DeviceReplica.Event] = [
            .init(.connected(BluetoothAddress("F0:E0:D0:00:00:01")), time: 1.0, frame: 30),
            .init(.subscribe(handle: 0x0014, notify: true, indicate: false), time: 1.3, frame: 52),
        ]
        var frame = 100
        for write in 0..<14 {  // 14 x 1000 x 512 bytes: 14 MiB of hex, over the 12 MiB budget
            conversation.append(.init(.write(handle: 0x0012, value: [UInt8(write)], withResponse: true), time: Double(frame), frame: frame))
            frame += 1
            for i in 0..<1_000 {
                conversation.append(
                    .init(
                        .notification(handle: 0x0014, value: [UInt8(i & 0xFF)] + big, indication: false),
                        time: Double(frame), frame: frame))
                frame += 1
            }
        }
        replica.conversation = conversation
        let result = ReplicaProfile(replica).build()
        #expect(result.text.utf8.count < ProfileLimits.fileSize)
        #expect(result.report.contains { $0.contains("left out") && $0.contains("notifications") }, "\(result.report)")
        // A cut profile loads (shown on a smaller budget: loading 12 MiB takes seconds in a debug build).
        var options = ReplicaProfile.Options()
        options.maximumNotificationText = 256 << 10
        let small = ReplicaProfile(replica, options: options).build()
        #expect(small.text.utf8.count < 512 << 10)
        #expect(small.report.contains { $0.contains("left out") && $0.contains("notifications") })
        #expect(!(try Self.load(small)).rules.isEmpty)
    }

    @Test func unrecordedWritesCanFailOrBeAnsweredAsTheNearestRecording() throws {
        var options = ReplicaProfile.Options()
        options.otherwise = .error
        let failing = try Self.load(ReplicaProfile(Recordings.lock(), options: options).build())
        var engine = BehaviourEngine(
            profile: failing, environment: EngineEnvironment(adapterAddress: BluetoothAddress("D0:1F:A6:44:B3:6F")!))
        let central = CentralID(address: BluetoothAddress("F0:E0:D0:00:00:01")!)
        let rx = failing.characteristics[0].id
        #expect(engine.handle(.write(characteristic: rx, central: central, value: [7], withResponse: true)).reply == .error(.failed))

        options.otherwise = .nearest
        let nearest = try Self.load(ReplicaProfile(Recordings.lock(), options: options).build())
        engine = BehaviourEngine(profile: nearest, environment: EngineEnvironment(adapterAddress: BluetoothAddress("D0:1F:A6:44:B3:6F")!))
        var close = Recordings.unlock
        close[19] ^= 0xFF
        let outcome = engine.handle(.write(characteristic: rx, central: central, value: close, withResponse: true))
        #expect(outcome.notifications.map(\.value) == [Recordings.answer])
    }

    @Test func handlesArePinnedOnlyWhereBlueZCanLayThemOut() throws {
        let pinned = ReplicaProfile(Recordings.lock()).build()
        let profile = try Self.load(pinned)
        #expect(profile.services.first?.handle == 0x0010)
        #expect(profile.characteristics.map(\.handle) == [0x0012, 0x0014, 0x0018])
        var gap = Recordings.lock()
        gap.services[1].characteristics[2].valueHandle = 0x0030  // not where BlueZ would put it
        let unpinned = ReplicaProfile(gap).build()
        #expect(try Self.load(unpinned).services.first?.handle == nil)
        #expect(unpinned.report.contains { $0.contains("handles not pinned") })
    }

    @Test func servicesBlueZRegistersItselfAreLeftOutAndTheRestStayPinned() throws {
        var replica = Recordings.lock()
        // As a gattemu-on-BlueZ device looks from outside: BlueZ's own PnP-only Device Information and
        // Volume Control services in front of the profile's service.
        var deviceInformation = DeviceReplica.Service(uuid: BluetoothUUID(0x180A), handle: 0x0006, endHandle: 0x0008)
        deviceInformation.characteristics = [
            DeviceReplica.Characteristic(uuid: BluetoothUUID(0x2A50), properties: .read, declarationHandle: 7, valueHandle: 8)
        ]
        let volume = DeviceReplica.Service(uuid: BluetoothUUID(0x1844), handle: 0x0009, endHandle: 0x000F)
        replica.services.insert(contentsOf: [deviceInformation, volume], at: 1)
        let result = ReplicaProfile(replica).build()
        let profile = try Self.load(result)
        #expect(profile.services.map(\.uuid) == [Recordings.service])
        #expect(profile.services.first?.handle == 0x0010)
        #expect(result.report.contains { $0.contains("PnP ID only") } && result.report.contains { $0.contains("LE Audio") })
        // A real device's Device Information service (more than the PnP ID) is the device's own: kept.
        replica.services[1].characteristics.append(DeviceReplica.Characteristic(uuid: BluetoothUUID(0x2A29), properties: .read))
        #expect(try Self.load(ReplicaProfile(replica).build()).services.contains { $0.uuid == BluetoothUUID(0x180A) })
    }

    @Test func aCharacteristicDeclaredWithNoPropertiesIsServedWithoutAccess() throws {
        // Found by the capture fuzz target: a declaration whose properties byte is 0x00. BlueZ refuses a
        // characteristic with no flags, so the import must not emit one.
        var replica = Recordings.lock()
        replica.services[1].characteristics[2].properties = []
        replica.services[1].characteristics[2].value = nil
        let result = ReplicaProfile(replica).build()
        let profile = try Self.load(result)
        #expect(profile.characteristics[2].flags.map(\.rawValue) == ["broadcast"])
        #expect(profile.characteristics.map(\.handle) == [0x0012, 0x0014, 0x0018], "still in its place")
        #expect(result.report.contains { $0.contains("declared with no properties") }, "\(result.report)")
    }

    @Test func namesWithBracesAndOddAdvertisementsStayValid() throws {
        var replica = Recordings.lock()
        replica.name = "Lock {1}"
        replica.scanResponse = AdvertisingData([
            ADStructure(type: .completeLocalName, data: Array("Lock {1}".utf8)),
            ADStructure(type: ADType(rawValue: 0x24), data: [0xAB]),
            ADStructure(type: .peripheralConnectionIntervalRange, data: [0x08, 0x00, 0x20, 0x00]),
        ])
        let crowded = ReplicaProfile(replica).build()
        let profile = try Self.load(crowded)
        #expect(
            profile.deviceName(
                environment: EngineEnvironment(adapterAddress: BluetoothAddress("D0:1F:A6:44:B3:6F")!), state: [:], variables: [:])
                == "Lock {1}")
        // BlueZ 5.66 puts everything but the name in the advertising data: the unknown structure does not fit.
        #expect(!crowded.text.contains("\"0x24\""))
        #expect(crowded.report.contains { $0.contains("other AD structures (0x24) left out") })
        // bluetoothd would refuse the whole advertisement with a connection interval range in it (a real bed base).
        #expect(!crowded.text.contains("\"0x12\""))
        #expect(
            crowded.report.contains { $0.contains("peripheral connection interval range structure (0x08002000) left out") },
            "\(crowded.report)")
        replica.advertisingData?.structures.removeAll { $0.type == .manufacturerData }
        let roomy = ReplicaProfile(replica).build()
        let advertised = try Self.load(roomy).advertisements(
            variant: nil, environment: EngineEnvironment(adapterAddress: BluetoothAddress("D0:1F:A6:44:B3:6F")!))
        #expect(advertised.first?.data == [0x24: [0xAB]])
    }

    /// gattemu advertises `device.appearance` wherever an advertisement sets none. An appearance read from the GAP
    /// service (BlueZ 5.82 lets a central read it) that the device did not advertise made the relay of a Bumble device
    /// advertise 32 bytes and exit "advertisement does not fit". It stays out unless the advertisement carries it.
    @Test func anAppearanceTheDeviceDidNotAdvertiseIsNotAdvertised() throws {
        var replica = Recordings.lock()
        var gap = DeviceReplica.Service(uuid: .genericAccess, handle: 1, endHandle: 5)
        var appearance = DeviceReplica.Characteristic(uuid: .appearance, properties: [.read], declarationHandle: 2, valueHandle: 3)
        appearance.value = [0x40, 0x03]
        gap.characteristics = [appearance]
        replica.services[0] = gap
        let environment = EngineEnvironment(adapterAddress: BluetoothAddress("D0:1F:A6:44:B3:6F")!)
        let result = ReplicaProfile(replica).build()
        let profile = try Self.load(result)
        let advertised = try #require(profile.advertisements(variant: nil, environment: environment).first)
        #expect(advertised.appearance == nil)
        #expect(!result.text.contains("0x0340"))
        #expect(result.report.contains { $0.hasPrefix("device: appearance 0x0340 (from the GAP service) left out") }, "\(result.report)")

        // Advertised (and fitting): kept, in the advertisement and as the device's.
        replica.advertisingData?.structures.removeAll { $0.type == .manufacturerData }
        replica.advertisingData?.structures.append(ADStructure(type: .appearance, data: [0x40, 0x03]))
        let kept = ReplicaProfile(replica).build()
        let keptProfile = try Self.load(kept)
        #expect(keptProfile.advertisements(variant: nil, environment: environment).first?.appearance == 0x0340)
        #expect(kept.text.contains("\"appearance\": \"0x0340\""), "\(kept.text)")
    }
}
