import BlueZ
import BlueZTestSupport
import Bluetooth
import DBus
import DBusTestSupport
import Foundation
import Testing

/// A central's address in a test.
func address(_ text: String) -> BluetoothAddress {
    guard let address = BluetoothAddress(text) else { preconditionFailure("not an address: \(text)") }
    return address
}

/// The owner of the notification socket acquired for the device object at `path`.
func socketOwner(_ path: DBusObjectPath) -> NotificationSocketOwner {
    NotificationSocketOwner(device: path, central: BlueZDevicePath.address(of: path))
}

/// The GATT application as bluetoothd sees it on a real (private) bus.
@Suite struct GattApplicationTests {
    static let services = [
        GattServiceDefinition(
            id: "battery", uuid: BluetoothUUID("0000180f-0000-1000-8000-00805f9b34fb")!,
            characteristics: [
                GattCharacteristicDefinition(
                    id: "level", uuid: BluetoothUUID("00002a19-0000-1000-8000-00805f9b34fb")!,
                    flags: CharacteristicFlags(properties: [.read, .notify]),
                    initialValue: [99], notifyPath: .acquireNotify,
                    descriptors: [
                        GattDescriptorDefinition(
                            id: "label", uuid: BluetoothUUID("00002901-0000-1000-8000-00805f9b34fb")!, initialValue: Array("Level".utf8))
                    ]),
                GattCharacteristicDefinition(
                    id: "control", uuid: BluetoothUUID("12345678-0000-4000-8000-000000000001")!,
                    flags: CharacteristicFlags(properties: [.write, .indicate])),
            ]),
        GattServiceDefinition(
            id: "extra", uuid: BluetoothUUID("12345678-0000-4000-8000-000000000000")!, primary: false, includes: ["battery"],
            characteristics: []),
    ]

    struct Setup {
        let bus: PrivateBus
        let bluetoothd: StandInBluetoothd
        let stack: BlueZStack
        let application: GattApplication
        let handler: RecordingHandler
    }

    static func setUp(handler: RecordingHandler = RecordingHandler(), newerBlueZ: Bool = false) async throws -> Setup {
        let bus = try PrivateBus()
        let bluetoothd = try await StandInBluetoothd.withAdapter(bus, configuration: .init(newerBlueZ: newerBlueZ))
        let stack = try await BlueZStack.connect(bus: .address(bus.address))
        let adapter = try await stack.adapter("hci0")
        let application = try await GattApplication.register(services: services, handler: handler, adapter: adapter, stack: stack)
        return Setup(bus: bus, bluetoothd: bluetoothd, stack: stack, application: application, handler: handler)
    }

    @Test func registersAnObjectTreeBluetoothdCanRead() async throws {
        let setup = try await Self.setUp()
        let registered = setup.bluetoothd.applications
        #expect(registered.map(\.path) == ["/org/gattemu/app0"])
        #expect(registered.first?.owner == setup.stack.connection.uniqueName)
        let reply = try await setup.bluetoothd.call(
            setup.stack.connection.uniqueName, "/org/gattemu/app0", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
        guard case .dictionary(_, _, let entries)? = reply.first else {
            Issue.record("no objects")
            return
        }
        let objects = Dictionary(
            uniqueKeysWithValues: entries.compactMap { entry in
                entry.key.objectPath.map { ($0.rawValue, entry.value) }
            })
        #expect(
            objects.keys.sorted() == [
                "/org/gattemu/app0/service0", "/org/gattemu/app0/service0/char0", "/org/gattemu/app0/service0/char0/desc0",
                "/org/gattemu/app0/service0/char1", "/org/gattemu/app0/service1",
            ])
        func properties(_ path: String, _ interface: String) -> [String: DBusValue] {
            guard case .dictionary(_, _, let interfaces)? = objects[path] else { return [:] }
            return interfaces.first { $0.key.string == interface }?.value.stringKeyedDictionary ?? [:]
        }
        let level = properties("/org/gattemu/app0/service0/char0", BlueZNames.gattCharacteristic)
        #expect(level["UUID"] == .string("00002a19-0000-1000-8000-00805f9b34fb"))
        #expect(level["Service"] == .objectPath("/org/gattemu/app0/service0"))
        #expect(level["Flags"] == .strings(["read", "notify"]))
        #expect(level["Value"] == .bytes([99]))
        #expect(level["NotifyAcquired"] == .boolean(false))
        #expect(level["Notifying"] == .boolean(false))
        #expect(level["Handle"] == .uint16(0))
        let control = properties("/org/gattemu/app0/service0/char1", BlueZNames.gattCharacteristic)
        #expect(control["NotifyAcquired"] == nil, "indicate-only characteristics use PropertiesChanged")
        let extra = properties("/org/gattemu/app0/service1", BlueZNames.gattService)
        #expect(extra["Primary"] == .boolean(false))
        #expect(extra["Includes"] == .objectPaths(["/org/gattemu/app0/service0"]))
        let label = properties("/org/gattemu/app0/service0/char0/desc0", BlueZNames.gattDescriptor)
        #expect(label["Characteristic"] == .objectPath("/org/gattemu/app0/service0/char0"))
        #expect(label["Value"] == .bytes(Array("Level".utf8)))

        await setup.application.unregister()
        #expect(setup.bluetoothd.applications.isEmpty)
        await #expect(throws: DBusError.self) {
            try await setup.bluetoothd.call(
                setup.stack.connection.uniqueName, "/org/gattemu/app0/service0/char0", BlueZNames.gattCharacteristic, "ReadValue",
                [StandInBluetoothd.options()])
        }
    }

    @Test func readsAndWritesCarryOffsetMTUAndCentral() async throws {
        let setup = try await Self.setUp()
        let app = setup.stack.connection.uniqueName
        let level: DBusObjectPath = "/org/gattemu/app0/service0/char0"
        let long = try await setup.bluetoothd.call(
            app, level, BlueZNames.gattCharacteristic, "ReadValue", [StandInBluetoothd.options(offset: 40, mtu: 185)])
        #expect(long == [.bytes(Array(40..<100))])
        let read = try #require(setup.handler.reads.withLock { $0.first })
        #expect(read.offset == 40)
        #expect(read.context.mtu == ATTMTU(rawValue: 185))
        #expect(read.context.central == address("00:AA:01:02:00:02"))
        #expect(read.context.link == .le)
        #expect(read.attribute == GattAttributeID(characteristic: "level"))

        _ = try await setup.bluetoothd.call(
            app, "/org/gattemu/app0/service0/char1", BlueZNames.gattCharacteristic, "WriteValue",
            [.bytes([1, 2, 3]), StandInBluetoothd.options()])
        let write = try #require(setup.handler.writes.withLock { $0.first })
        #expect(write.value == [1, 2, 3])
        #expect(write.kind == .request)
        #expect(!write.bluetoothdAnswered)

        let descriptor = try await setup.bluetoothd.call(
            app, "/org/gattemu/app0/service0/char0/desc0", BlueZNames.gattDescriptor, "ReadValue", [StandInBluetoothd.options()])
        #expect(descriptor == [.bytes(Array(0..<100))])
        #expect(setup.handler.reads.withLock { $0.last?.attribute } == GattAttributeID(characteristic: "level", descriptor: "label"))
    }

    @Test(arguments: [
        (ATTError.notPermitted, "org.bluez.Error.NotPermitted", "Not permitted"),
        (ATTError.invalidValueLength, "org.bluez.Error.InvalidValueLength", "Invalid value length"),
        (ATTError.application(0x80), "org.bluez.Error.Failed", "0x80"),
        (ATTError.application(0x9F), "org.bluez.Error.Failed", "0x9F"),
    ])
    func handlerErrorsBecomeBlueZErrors(error: ATTError, name: String, message: String) async throws {
        let setup = try await Self.setUp(handler: RecordingHandler(writeError: error))
        await #expect(throws: DBusError.named(name, message: message)) {
            try await setup.bluetoothd.call(
                setup.stack.connection.uniqueName, "/org/gattemu/app0/service0/char1", BlueZNames.gattCharacteristic,
                "WriteValue", [.bytes([0]), StandInBluetoothd.options()])
        }
    }

    @Test func onlyBluetoothdMayCallTheApplication() async throws {
        let setup = try await Self.setUp()
        let intruder = try await setup.bus.connect()
        for (path, interface, member, arguments) in [
            ("/org/gattemu/app0/service0/char0", BlueZNames.gattCharacteristic, "ReadValue", [StandInBluetoothd.options()]),
            (
                "/org/gattemu/app0/service0/char1", BlueZNames.gattCharacteristic, "WriteValue",
                [DBusValue.bytes([1]), StandInBluetoothd.options()]
            ),
            ("/org/gattemu/app0", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", []),
            (
                "/org/gattemu/app0/service0/char0", "org.freedesktop.DBus.Properties", "GetAll",
                [DBusValue.string(BlueZNames.gattCharacteristic)]
            ),
        ] as [(DBusObjectPath, String, String, [DBusValue])] {
            let error = await #expect(throws: DBusError.self) {
                try await intruder.call(
                    destination: setup.stack.connection.uniqueName, path: path, interface: interface, member: member, arguments: arguments)
            }
            #expect(error?.name == DBusError.Name.accessDenied, "\(interface).\(member) on \(path)")
        }
        #expect(setup.handler.reads.withLock { $0.isEmpty })
        #expect(setup.handler.writes.withLock { $0.isEmpty })
    }

    @Test func acquiredNotificationsArriveOnTheSocket() async throws {
        let setup = try await Self.setUp()
        let reply = try await setup.bluetoothd.call(
            setup.stack.connection.uniqueName, "/org/gattemu/app0/service0/char0",
            BlueZNames.gattCharacteristic, "AcquireNotify", [StandInBluetoothd.options(mtu: 247)])
        #expect(reply.count == 2)
        #expect(reply.last == .uint16(247))
        let socket = try #require(reply.first?.unixFD)
        #expect(setup.handler.subscriptions.withLock { $0.map(\.kind) } == [.acquired])
        let delivery = try await setup.application.notify("level", value: [1, 2, 3], central: address("00:AA:01:02:00:02"))
        #expect(delivery == .sockets([socketOwner("/org/bluez/hci0/dev_00_AA_01_02_00_02")]))
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = recv(socket.rawValue, &buffer, buffer.count, 0)
        #expect(Array(buffer.prefix(max(count, 0))) == [1, 2, 3])

        // bluetoothd closing its end is an unsubscription.
        close(socket.takeRawValue())
        try await eventually { setup.handler.subscriptions.withLock { $0.count } == 2 }
        #expect(setup.handler.subscriptions.withLock { $0.map(\.kind) } == [.acquired, .released])
    }

    /// AcquireNotify for `device` (`dev_…`) as bluetoothd calls it; returns bluetoothd's end of the socket.
    static func acquire(_ setup: Setup, _ device: String) async throws -> Int32 {
        let options = DBusValue.stringVariantDictionary([
            "device": .objectPath(DBusObjectPath("/org/bluez/hci0/\(device)")), "mtu": .uint16(247),
        ])
        let reply = try await setup.bluetoothd.call(
            setup.stack.connection.uniqueName, "/org/gattemu/app0/service0/char0",
            BlueZNames.gattCharacteristic, "AcquireNotify", [options])
        return try #require(reply.first?.unixFD).takeRawValue()
    }

    /// What is waiting on bluetoothd's end of a notification socket, without blocking.
    static func pending(_ socket: Int32) -> [[UInt8]] {
        var packets: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 64)
        while case let count = recv(socket, &buffer, buffer.count, Int32(MSG_DONTWAIT)), count > 0 {
            packets.append(Array(buffer.prefix(count)))
        }
        return packets
    }

    @Test func perCentralSocketsCarryOnlyThatCentralsNotifications() async throws {
        let setup = try await Self.setUp(newerBlueZ: true)
        let first = try await Self.acquire(setup, "dev_00_AA_01_02_00_02")
        let second = try await Self.acquire(setup, "dev_00_AA_01_03_00_03")
        defer { close(first) }
        #expect(
            try await setup.application.notify("level", value: [3], central: address("00:AA:01:03:00:03"))
                == .sockets([socketOwner("/org/bluez/hci0/dev_00_AA_01_03_00_03")]))
        #expect(Self.pending(second) == [[3]])
        #expect(Self.pending(first) == [])
        // A central with no socket of its own is not subscribed: nothing goes to the others.
        #expect(try await setup.application.notify("level", value: [6], central: address("00:AA:01:04:00:04")) == .sockets([]))
        // bluetoothd closes the second central's socket (BlueZ closes a wrong one when another central
        // disconnects): its notifications go nowhere instead of to the first central.
        close(second)
        try await eventually { setup.application.acquiredNotificationCentrals("level").count == 1 }
        #expect(try await setup.application.notify("level", value: [4], central: address("00:AA:01:03:00:03")) == .sockets([]))
        #expect(Self.pending(first) == [])
        #expect(try await setup.application.notify("level", value: [5]) == .sockets([socketOwner("/org/bluez/hci0/dev_00_AA_01_02_00_02")]))
        #expect(Self.pending(first) == [[5]])
    }

    /// BlueZ before 5.70 keeps one socket per characteristic and sends what arrives on it to every subscribed
    /// central; it calls AcquireNotify only for the first subscriber (two when the second subscribes before the
    /// first call is answered). A notification for a later subscriber must go out on that socket, and one
    /// for everybody must be written once, not once per socket (each would reach every central).
    @Test func sharedSocketsOfOlderBlueZReachLaterSubscribersOnce() async throws {
        let setup = try await Self.setUp()
        let first = try await Self.acquire(setup, "dev_00_AA_01_02_00_02")
        let second = try await Self.acquire(setup, "dev_00_AA_01_03_00_03")
        defer {
            close(first)
            close(second)
        }
        #expect(
            try await setup.application.notify("level", value: [3], central: address("00:AA:01:04:00:04"))
                == .sockets([socketOwner("/org/bluez/hci0/dev_00_AA_01_02_00_02")]))
        #expect(
            try await setup.application.notify("level", value: [4], central: address("00:AA:01:03:00:03"))
                == .sockets([socketOwner("/org/bluez/hci0/dev_00_AA_01_03_00_03")]))
        #expect(try await setup.application.notify("level", value: [5]) == .sockets([socketOwner("/org/bluez/hci0/dev_00_AA_01_02_00_02")]))
        #expect(Self.pending(first) == [[3], [5]])
        #expect(Self.pending(second) == [[4]])
    }

    @Test func notificationsWithoutSocketsArePropertiesChanged() async throws {
        let setup = try await Self.setUp()
        let changes = AsyncCollector<DBusSignal>()
        _ = try await setup.bluetoothd.connection.subscribe(
            to: DBusMatchRule(
                path: "/org/gattemu/app0/service0/char1", interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")
        ) { changes.append($0) }
        _ = try await setup.bluetoothd.call(
            setup.stack.connection.uniqueName, "/org/gattemu/app0/service0/char1", BlueZNames.gattCharacteristic, "StartNotify")
        let delivery = try await setup.application.notify("control", value: [7, 7])
        #expect(delivery == .propertiesChanged)
        let received = await changes.wait(for: 2)
        #expect(
            received.map { $0.arguments[1].stringKeyedDictionary ?? [:] } == [["Notifying": .boolean(true)], ["Value": .bytes([7, 7])]])
    }
}

/// Numbers in GATT calls are checked where they enter: out-of-range offsets and oversized values are refused
/// with the ATT error BlueZ would give, MTUs outside 23…517 are taken as not given, and the handler never
/// sees any of it. (Only bluetoothd may call, but nothing it sends may trap.)
@Suite struct GattHostileNumberTests {
    @Test func outOfRangeOffsetsAndLengthsAreRefusedBeforeTheHandler() async throws {
        let setup = try await GattApplicationTests.setUp()
        let target = setup.stack.connection.uniqueName
        let level: DBusObjectPath = "/org/gattemu/app0/service0/char0"
        let control: DBusObjectPath = "/org/gattemu/app0/service0/char1"
        let device: DBusValue = .objectPath("/org/bluez/hci0/dev_00_AA_01_02_00_02")
        for offset: DBusValue in [.int64(-5), .int32(-1), .uint32(70_000), .int64(.min), .uint64(.max)] {
            let options: DBusValue = .stringVariantDictionary(["device": device, "offset": offset])
            let read = await #expect(throws: DBusError.self) {
                try await setup.bluetoothd.call(target, level, BlueZNames.gattCharacteristic, "ReadValue", [options])
            }
            #expect(read?.name == "org.bluez.Error.InvalidOffset", "read at \(offset)")
            let write = await #expect(throws: DBusError.self) {
                try await setup.bluetoothd.call(target, control, BlueZNames.gattCharacteristic, "WriteValue", [.bytes([1]), options])
            }
            #expect(write?.name == "org.bluez.Error.InvalidOffset", "write at \(offset)")
        }
        for (length, offset) in [(513, 0), (100, 500)] {
            let options: DBusValue = .stringVariantDictionary(["device": device, "offset": .uint16(UInt16(offset))])
            let write = await #expect(throws: DBusError.self) {
                try await setup.bluetoothd.call(
                    target, control, BlueZNames.gattCharacteristic, "WriteValue",
                    [.bytes(Array(repeating: 7, count: length)), options])
            }
            #expect(write?.name == "org.bluez.Error.InvalidValueLength", "\(length) bytes at \(offset)")
        }
        #expect(setup.handler.reads.withLock { $0.isEmpty })
        #expect(setup.handler.writes.withLock { $0.isEmpty })

        // MTUs outside what a link can have are ignored; the call itself is served.
        for mtu: DBusValue in [.uint16(0), .uint16(22), .uint16(518), .int64(-1)] {
            _ = try await setup.bluetoothd.call(
                target, level, BlueZNames.gattCharacteristic, "ReadValue",
                [.stringVariantDictionary(["device": device, "mtu": mtu])])
        }
        #expect(setup.handler.reads.withLock { $0.map(\.context.mtu) } == [nil, nil, nil, nil])
        // The largest legitimate offset still reaches the handler (which answers it: past its 100 bytes).
        _ = try? await setup.bluetoothd.call(
            target, level, BlueZNames.gattCharacteristic, "ReadValue",
            [.stringVariantDictionary(["device": device, "offset": .uint16(512)])])
        #expect(setup.handler.reads.withLock { $0.last?.offset } == 512)
    }
}

/// A central that stops reading its notification socket loses notifications past the socket's buffer,
/// counted; it never blocks the sender (the D-Bus thread) nor another central's notifications.
@Suite struct StalledNotificationSocketTests {
    @Test func aFullSocketDropsAndCountsWithoutBlocking() async throws {
        let setup = try await GattApplicationTests.setUp(newerBlueZ: true)
        let stalled = try await GattApplicationTests.acquire(setup, "dev_00_AA_01_02_00_02")
        let reading = try await GattApplicationTests.acquire(setup, "dev_00_AA_01_03_00_03")
        defer {
            close(stalled)
            close(reading)
        }
        var full: [NotificationSocketOwner: Int] = [:]
        var reached = 0
        // Far more than any socket buffer holds; with blocking sends this never returns.
        for index in 0..<5_000 {
            let value = Array(repeating: UInt8(truncatingIfNeeded: index), count: 20)
            guard
                case .sockets(let centrals, let dropped)? = try setup.application.notifyOnSockets(
                    "level", value: value, central: address("00:AA:01:02:00:02"))
            else {
                Issue.record("no socket delivery")
                return
            }
            reached += centrals.count
            full.merge(dropped) { max($0, $1) }
        }
        let key = socketOwner("/org/bluez/hci0/dev_00_AA_01_02_00_02")
        let dropped = try #require(full[key])
        #expect(dropped > 0)
        #expect(reached + dropped == 5_000, "every notification either left or was counted as dropped")
        // The other central is unaffected.
        #expect(
            try await setup.application.notify("level", value: [9], central: address("00:AA:01:03:00:03"))
                == .sockets([socketOwner("/org/bluez/hci0/dev_00_AA_01_03_00_03")]))
        #expect(GattApplicationTests.pending(reading) == [[9]])
        // What was queued arrives in order once the stalled central reads; then sending works again.
        let queued = GattApplicationTests.pending(stalled)
        #expect(queued.count == reached)
        #expect(queued.first == Array(repeating: 0, count: 20))
        #expect(try await setup.application.notify("level", value: [7], central: address("00:AA:01:02:00:02")) == .sockets([key]))
        #expect(GattApplicationTests.pending(stalled) == [[7]])
    }
}

/// Handles a profile asks for are offered to bluetoothd through each object's `Handle` property.
@Suite struct GattHandleTests {
    @Test func askedForHandlesAreExportedAndOthersAreZero() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let bluetoothd = try await StandInBluetoothd.withAdapter(bus)
        let stack = try await BlueZStack.connect(bus: .address(bus.address))
        let services = [
            GattServiceDefinition(
                id: "s", uuid: BluetoothUUID("0000180f-0000-1000-8000-00805f9b34fb")!,
                characteristics: [
                    GattCharacteristicDefinition(
                        id: "level", uuid: BluetoothUUID("00002a19-0000-1000-8000-00805f9b34fb")!,
                        flags: CharacteristicFlags(properties: .read),
                        descriptors: [
                            GattDescriptorDefinition(id: "d", uuid: BluetoothUUID("00002901-0000-1000-8000-00805f9b34fb")!, handle: 0x0023)
                        ], handle: 0x0022),
                    GattCharacteristicDefinition(
                        id: "free", uuid: BluetoothUUID("00002a1a-0000-1000-8000-00805f9b34fb")!,
                        flags: CharacteristicFlags(properties: .read)),
                ], handle: 0x0020)
        ]
        _ = try await GattApplication.register(
            services: services, handler: RecordingHandler(), adapter: try await stack.adapter("hci0"), stack: stack)
        func handle(_ path: DBusObjectPath, _ interface: String) async throws -> DBusValue? {
            try await bluetoothd.call(
                stack.connection.uniqueName, path, "org.freedesktop.DBus.Properties", "Get",
                [.string(interface), .string("Handle")]
            ).first?.unwrappingVariants
        }
        #expect(try await handle("/org/gattemu/app0/service0", BlueZNames.gattService) == .uint16(0x0020))
        #expect(try await handle("/org/gattemu/app0/service0/char0", BlueZNames.gattCharacteristic) == .uint16(0x0022))
        #expect(try await handle("/org/gattemu/app0/service0/char0/desc0", BlueZNames.gattDescriptor) == .uint16(0x0023))
        #expect(try await handle("/org/gattemu/app0/service0/char1", BlueZNames.gattCharacteristic) == .uint16(0))
        #expect(services[0].asksForHandles && !services[0].withoutHandles.asksForHandles)
    }
}
