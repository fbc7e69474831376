import DBus
import DBusTestSupport
import Synchronization
import Testing

/// Exported objects as another bus client sees them: methods, errors, properties, object manager, policy.
@Suite struct ExportTests {
    @Test func handlerErrorsReachTheCallerByName() async throws {
        let (bus, server, client) = try await Self.pair()
        defer { bus.stop() }
        try await server.export(
            [
                DBusInterface(
                    name: "test.Thing",
                    methods: [
                        DBusMethod("Fail") { _ in throw DBusError.named("org.bluez.Error.NotPermitted", message: "nope") },
                        DBusMethod("Crash") { _ in throw CancellationError() },
                    ])
            ], at: "/thing")
        await #expect(throws: DBusError.named("org.bluez.Error.NotPermitted", message: "nope")) {
            try await client.call(destination: server.uniqueName, path: "/thing", interface: "test.Thing", member: "Fail")
        }
        let other = await #expect(throws: DBusError.self) {
            try await client.call(destination: server.uniqueName, path: "/thing", interface: "test.Thing", member: "Crash")
        }
        #expect(other?.name == DBusError.Name.failed)
    }

    @Test func unknownTargetsAndBadArgumentsGetStandardErrors() async throws {
        let (bus, server, client) = try await Self.pair()
        defer { bus.stop() }
        try await server.export(
            [
                DBusInterface(
                    name: "test.Thing",
                    methods: [
                        DBusMethod("Take", input: "s") { _ in [] }
                    ])
            ], at: "/thing")
        let cases: [(DBusObjectPath, String, String, [DBusValue], String)] = [
            ("/nothing", "test.Thing", "Take", [.string("x")], DBusError.Name.unknownObject),
            ("/thing", "test.Other", "Take", [.string("x")], DBusError.Name.unknownInterface),
            ("/thing", "test.Thing", "Missing", [], DBusError.Name.unknownMethod),
            ("/thing", "test.Thing", "Take", [.int32(1)], DBusError.Name.invalidArgs),
        ]
        for (path, interface, member, arguments, expected) in cases {
            let error = await #expect(throws: DBusError.self) {
                try await client.call(
                    destination: server.uniqueName, path: path, interface: interface, member: member, arguments: arguments)
            }
            #expect(error?.name == expected, "\(path) \(interface).\(member)")
        }
    }

    @Test func propertiesCanBeReadWrittenAndAnnounced() async throws {
        let (bus, server, client) = try await Self.pair()
        defer { bus.stop() }
        let level = Mutex<UInt8>(7)
        try await server.export(
            [
                DBusInterface(
                    name: "test.Battery",
                    properties: [
                        .constant("Kind", .string("coin")),
                        DBusProperty(
                            "Level", signature: .byte, get: { .byte(level.withLock { $0 }) },
                            set: { value in
                                guard case .byte(let new) = value else { return }
                                level.withLock { $0 = new }
                            }),
                    ])
            ], at: "/battery")
        let props = "org.freedesktop.DBus.Properties"
        let all = try await client.call(
            destination: server.uniqueName, path: "/battery", interface: props, member: "GetAll", arguments: [.string("test.Battery")])
        #expect(all.first?.stringKeyedDictionary == ["Kind": .string("coin"), "Level": .byte(7)])
        _ = try await client.call(
            destination: server.uniqueName, path: "/battery", interface: props, member: "Set",
            arguments: [.string("test.Battery"), .string("Level"), .variant(.byte(42))])
        let level42 = try await client.call(
            destination: server.uniqueName, path: "/battery", interface: props, member: "Get",
            arguments: [.string("test.Battery"), .string("Level")])
        #expect(level42 == [.variant(.byte(42))])
        let readOnly = await #expect(throws: DBusError.self) {
            try await client.call(
                destination: server.uniqueName, path: "/battery", interface: props, member: "Set",
                arguments: [.string("test.Battery"), .string("Kind"), .variant(.string("x"))])
        }
        #expect(readOnly?.name == DBusError.Name.propertyReadOnly)

        let changes = AsyncCollector<DBusSignal>()
        _ = try await client.subscribe(to: DBusMatchRule(path: "/battery", interface: props, member: "PropertiesChanged")) {
            changes.append($0)
        }
        try await server.emitPropertiesChanged(path: "/battery", interface: "test.Battery", changed: ["Level": .byte(1)])
        let received = await changes.wait(for: 1)
        #expect(received.first?.arguments == [.string("test.Battery"), .stringVariantDictionary(["Level": .byte(1)]), .strings([])])
        #expect(received.first?.sender == server.uniqueName)
    }

    @Test func objectManagerListsAndAnnouncesObjects() async throws {
        let (bus, server, client) = try await Self.pair()
        defer { bus.stop() }
        try await server.exportObjectManager(at: "/app")
        try await server.export(
            [DBusInterface(name: "test.Service", properties: [.constant("UUID", .string("180f"))])], at: "/app/service0")
        let managed = try await client.call(
            destination: server.uniqueName, path: "/app", interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
        guard case .dictionary(_, _, let entries)? = managed.first else {
            Issue.record("not a dictionary")
            return
        }
        #expect(entries.map(\.key) == [.objectPath("/app/service0")])
        #expect(
            entries.first?.value
                == .dictionary(
                    key: .string, value: "a{sv}",
                    [
                        DBusDictionaryEntry(key: .string("test.Service"), value: .stringVariantDictionary(["UUID": .string("180f")]))
                    ]))

        let signals = AsyncCollector<DBusSignal>()
        _ = try await client.subscribe(to: DBusMatchRule(interface: "org.freedesktop.DBus.ObjectManager")) { signals.append($0) }
        try await server.export([DBusInterface(name: "test.Char")], at: "/app/service0/char0")
        try await server.unexport("/app/service0/char0")
        let received = await signals.wait(for: 2)
        #expect(received.map(\.member) == ["InterfacesAdded", "InterfacesRemoved"])
        #expect(received.last?.arguments == [.objectPath("/app/service0/char0"), .strings(["test.Char"])])

        let introspection = try await client.call(
            destination: server.uniqueName, path: "/app", interface: "org.freedesktop.DBus.Introspectable", member: "Introspect")
        let xml = try #require(introspection.first?.string)
        #expect(xml.contains(#"<node name="service0"/>"#))
        #expect(xml.contains("org.freedesktop.DBus.ObjectManager"))
    }

    @Test func callersOutsideThePolicyAreRefused() async throws {
        let (bus, server, client) = try await Self.pair()
        defer { bus.stop() }
        let trusted = try await bus.connect()
        let trustedName = trusted.uniqueName
        let calls = Mutex(0)
        try await server.export(
            [
                DBusInterface(
                    name: "test.Secret",
                    methods: [
                        DBusMethod("Open") { _ in
                            calls.withLock { $0 += 1 }
                            return []
                        }
                    ])
            ], at: "/secret", policy: DBusCallerPolicy { $0 == trustedName })
        let refused = await #expect(throws: DBusError.self) {
            try await client.call(destination: server.uniqueName, path: "/secret", interface: "test.Secret", member: "Open")
        }
        #expect(refused?.name == DBusError.Name.accessDenied)
        let propertiesRefused = await #expect(throws: DBusError.self) {
            try await client.call(
                destination: server.uniqueName, path: "/secret", interface: "org.freedesktop.DBus.Properties", member: "GetAll",
                arguments: [.string("test.Secret")])
        }
        #expect(propertiesRefused?.name == DBusError.Name.accessDenied)
        _ = try await trusted.call(destination: server.uniqueName, path: "/secret", interface: "test.Secret", member: "Open")
        #expect(calls.withLock { $0 } == 1)
    }

    @Test func nameOwnerChangesAreWatched() async throws {
        let (bus, server, _) = try await Self.pair()
        defer { bus.stop() }
        let owners = AsyncCollector<String?>()
        _ = try await server.watchNameOwner("org.example.Stack") { owners.append($0) }
        #expect(await owners.wait(for: 1) == [nil])
        let stack = try await bus.connect()
        try await stack.requestName("org.example.Stack")
        #expect(try await server.nameOwner(of: "org.example.Stack") == stack.uniqueName)
        await stack.close()
        #expect(await owners.wait(for: 3) == [nil, stack.uniqueName, nil])
    }

    @Test func aLostBusIsReported() async throws {
        let bus = try PrivateBus()
        let connection = try await bus.connect()
        let lost = AsyncCollector<Bool>()
        connection.onDisconnect { lost.append(true) }
        bus.stop()
        #expect(await lost.wait(for: 1) == [true])
        #expect(!connection.isConnected)
        await #expect(throws: DBusError.disconnected) {
            try await connection.call(destination: "org.example", path: "/", interface: "x.y", member: "Z")
        }
    }

    @Test func handlersStartInArrivalOrderAndBeginLetsLaterCallsOvertake() async throws {
        let (bus, server, client) = try await Self.pair()
        defer { bus.stop() }
        let started = Locked<[String]>([])
        let finished = Locked<[String]>([])
        // "Hold" waits 300 ms without begin(): later calls start only after it returns.
        // "Note" calls begin() first, then waits for the call after it to finish (at most 10 s): it can only
        // if begin() let it start.
        try await server.export(
            [
                DBusInterface(
                    name: "test.Order",
                    methods: [
                        DBusMethod("Hold", input: "s") { call in
                            started.withLock { $0.append((try? call.arguments[0].string) ?? "") }
                            try await Task.sleep(for: .milliseconds(300))
                            finished.withLock { $0.append((try? call.arguments[0].string) ?? "") }
                            return []
                        },
                        DBusMethod("Note", input: "s") { call in
                            started.withLock { $0.append((try? call.arguments[0].string) ?? "") }
                            call.begin()
                            let end = ContinuousClock.now + .seconds(10)
                            while !finished.value.contains("last"), ContinuousClock.now < end {
                                try await Task.sleep(for: .milliseconds(10))
                            }
                            finished.withLock { $0.append((try? call.arguments[0].string) ?? "") }
                            return []
                        },
                        DBusMethod("Quick", input: "s") { call in
                            started.withLock { $0.append((try? call.arguments[0].string) ?? "") }
                            finished.withLock { $0.append((try? call.arguments[0].string) ?? "") }
                            return []
                        },
                    ])
            ], at: "/order")
        func send(_ member: String, _ label: String) async throws {
            try await client.callWithoutReply(
                destination: server.uniqueName, path: "/order", interface: "test.Order",
                member: member, arguments: [.string(label)])
        }
        let labels = (0..<20).map { "q\($0)" }
        try await send("Hold", "hold")
        for label in labels { try await send("Quick", label) }
        try await send("Note", "note")
        try await send("Quick", "last")
        let deadline = ContinuousClock.now + .seconds(10)
        while finished.value.count < 23, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(started.value == ["hold"] + labels + ["note", "last"])
        #expect(finished.value == ["hold"] + labels + ["last", "note"])
    }

    static func pair() async throws -> (PrivateBus, DBusConnection, DBusConnection) {
        let bus = try PrivateBus()
        return (bus, try await bus.connect(), try await bus.connect())
    }
}
