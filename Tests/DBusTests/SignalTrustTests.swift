import DBus
import DBusTestSupport
import Synchronization
import Testing

/// Signals are trusted by who really sent them, not by the name they claim: the bus delivers a signal sent
/// to us directly whatever our match rules say, and any client may send one (GLib's CVE-2024-34397 class).
@Suite struct SignalTrustTests {
    static let busName = "org.freedesktop.DBus"
    static let busPath: DBusObjectPath = "/org/freedesktop/DBus"

    /// A spoofed `NameOwnerChanged`, sent to us directly or broadcast, changes nothing we follow; the unicast
    /// one is reported as refused. A real change of owner is still seen.
    @Test func spoofedNameOwnerChangedIsIgnored() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let service = try await bus.connect()
        try await service.requestName("test.Service")
        let victim = try await bus.connect()
        let attacker = try await bus.connect()
        let owners = AsyncCollector<String?>()
        let refusals = AsyncCollector<DBusRefusal>()
        victim.onRefusal { refusals.append($0) }
        try await victim.watchNameOwner("test.Service") { owners.append($0) }
        #expect(await owners.wait(for: 1) == [service.uniqueName])

        for destination in [victim.uniqueName, nil] {
            try await attacker.emitSignal(
                path: Self.busPath, interface: Self.busName, member: "NameOwnerChanged",
                arguments: [.string("test.Service"), .string(service.uniqueName), .string(":1.999")], destination: destination)
            try await attacker.emitSignal(
                path: Self.busPath, interface: Self.busName, member: "NameOwnerChanged",
                arguments: [.string("test.Service"), .string(service.uniqueName), .string("")], destination: destination)
        }
        try await Self.settle(attacker, victim)
        #expect(owners.values == [service.uniqueName])
        #expect(victim.currentOwner(of: "test.Service") == service.uniqueName)
        let refused = await refusals.wait(for: 2)
        #expect(refused.count == 2)
        #expect(refused.allSatisfy { $0.reason == .unicastSignal && $0.sender == attacker.uniqueName && $0.member == "NameOwnerChanged" })

        // The real thing: the owner leaves, another client takes the name.
        await service.close()
        #expect(await owners.wait(for: 2).last == .some(nil))
        let successor = try await bus.connect()
        try await successor.requestName("test.Service")
        #expect(await owners.wait(for: 3).last == successor.uniqueName)
        #expect(victim.currentOwner(of: "test.Service") == successor.uniqueName)
    }

    /// A subscription to a well-known sender gets that name's owner's signals only — across a change of
    /// owner — and never another client's, whether broadcast or sent to us directly.
    @Test func signalsFromAWellKnownSenderComeOnlyFromItsOwner() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let service = try await bus.connect()
        try await service.requestName("test.Service")
        let victim = try await bus.connect()
        let attacker = try await bus.connect()
        let received = AsyncCollector<DBusSignal>()
        let refusals = AsyncCollector<DBusRefusal>()
        victim.onRefusal { refusals.append($0) }
        _ = try await victim.subscribe(to: DBusMatchRule(sender: "test.Service", interface: "test.Events", member: "Changed")) {
            received.append($0)
        }
        for destination in [victim.uniqueName, nil] {
            try await attacker.emitSignal(
                path: "/x", interface: "test.Events", member: "Changed", arguments: [.string("fake")],
                destination: destination)
        }
        try await service.emitSignal(path: "/x", interface: "test.Events", member: "Changed", arguments: [.string("real")])
        let first = await received.wait(for: 1)
        try await Self.settle(attacker, victim)
        #expect(received.values.map(\.arguments) == [[.string("real")]])
        #expect(first.first?.sender == service.uniqueName)
        #expect(await refusals.wait(for: 1).map(\.reason) == [.unicastSignal])

        // The owner changes: the new owner's signals arrive, the old one's would not.
        let old = service
        let successor = try await bus.connect()
        await old.close()
        try await successor.requestName("test.Service")
        try await Self.waitForOwner(victim, "test.Service", successor.uniqueName)
        try await successor.emitSignal(path: "/x", interface: "test.Events", member: "Changed", arguments: [.string("second")])
        #expect(await received.wait(for: 2).last?.arguments == [.string("second")])
    }

    /// A client that owns nothing cannot pose as a well-known name by sending a signal to us directly,
    /// while the name has no owner at all either.
    @Test func signalsClaimingAnUnownedNameAreRefused() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let victim = try await bus.connect()
        let attacker = try await bus.connect()
        let received = AsyncCollector<DBusSignal>()
        _ = try await victim.subscribe(to: DBusMatchRule(sender: "test.Absent", interface: "test.Events")) { received.append($0) }
        #expect(victim.currentOwner(of: "test.Absent") == nil)
        for destination in [victim.uniqueName, nil] {
            try await attacker.emitSignal(path: "/x", interface: "test.Events", member: "Changed", destination: destination)
        }
        try await Self.settle(attacker, victim)
        #expect(received.values.isEmpty)
    }

    /// Method calls denied by an object's policy are reported as refused.
    @Test func deniedMethodCallsAreReported() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let server = try await bus.connect()
        let caller = try await bus.connect()
        let refusals = AsyncCollector<DBusRefusal>()
        server.onRefusal { refusals.append($0) }
        try await server.export(
            [DBusInterface(name: "test.Thing", methods: [DBusMethod("Poke") { _ in [] }])], at: "/thing",
            policy: DBusCallerPolicy { _ in false })
        await #expect(throws: DBusError.self) {
            try await caller.call(destination: server.uniqueName, path: "/thing", interface: "test.Thing", member: "Poke")
        }
        let refused = await refusals.wait(for: 1)
        #expect(refused.first?.reason == .callerNotAllowed)
        #expect(refused.first?.sender == caller.uniqueName)
        #expect(refused.first?.member == "Poke")
    }

    /// Returns once everything `sender` sent before has been routed by the bus and read by `receiver`: each
    /// does a round trip through the bus, which answers a client in the order it sent.
    static func settle(_ sender: DBusConnection, _ receiver: DBusConnection) async throws {
        _ = try await sender.nameOwner(of: busName)
        _ = try await receiver.nameOwner(of: busName)
    }

    static func waitForOwner(_ connection: DBusConnection, _ name: String, _ owner: String) async throws {
        try await eventually { connection.currentOwner(of: name) == owner }
        #expect(connection.currentOwner(of: name) == owner)
    }
}
