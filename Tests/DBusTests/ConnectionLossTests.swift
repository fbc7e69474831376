import DBus
import DBusTestSupport
import Testing

/// What a connection does when its bus goes away: every pending and later operation fails, none waits forever.
@Suite struct ConnectionLossTests {
    @Test func operationsInFlightWhenTheBusDiesFailInsteadOfHanging() async throws {
        let bus = try PrivateBus()
        let server = try await bus.connect()
        let client = try await bus.connect()
        try await server.export(
            [
                DBusInterface(
                    name: "test.Thing",
                    methods: [
                        DBusMethod("Never") { _ in
                            try await Task.sleep(for: .seconds(3600))
                            return []
                        }
                    ])
            ], at: "/thing")
        let lost = AsyncCollector<String>()
        client.onDisconnect { lost.append("client") }

        // One call waits for a reply that will never come; many more race the bus's death.
        let finished = AsyncCollector<String>()
        let destination = server.uniqueName
        Task {
            do { _ = try await client.call(destination: destination, path: "/thing", interface: "test.Thing", member: "Never") } catch {
                finished.append("pending call: \(error)")
            }
        }
        let racing = 300
        for index in 0..<racing {
            Task {
                do {
                    if index.isMultiple(of: 2) {
                        try await client.emitSignal(path: "/thing", interface: "test.Thing", member: "Tick")
                    } else {
                        _ = try await client.call(
                            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                            interface: "org.freedesktop.DBus", member: "GetId")
                    }
                    finished.append("ok")
                } catch {
                    finished.append("\(error)")
                }
            }
            if index == racing / 3 { bus.stop() }
        }

        let outcomes = await finished.wait(for: racing + 1)
        #expect(outcomes.count == racing + 1, "operations that never finished: \(racing + 1 - outcomes.count)")
        #expect(outcomes.contains { $0.hasPrefix("pending call:") })
        #expect(await lost.wait(for: 1) == ["client"])
        #expect(!client.isConnected)
        await #expect(throws: DBusError.disconnected) {
            try await client.emitSignal(path: "/thing", interface: "test.Thing", member: "Tick")
        }
    }

    /// Closing flushes what was queued, but a bus that reads nothing (hung, or stopped) cannot hold the loop thread:
    /// shutdown goes on after a bounded wait. It used to wait in `dbus_connection_flush` for as long as the bus did.
    @Test func closingGivesUpOnABusThatReadsNothing() async throws {
        let bus = try PrivateBus()
        let client = try await bus.connect()
        let other = try await bus.connect()
        bus.freeze()
        defer { bus.stop() }
        // More than the socket holds: most of it stays queued in libdbus.
        for _ in 0..<16 {
            try await client.emitSignal(
                path: "/thing", interface: "test.Thing", member: "Big", arguments: [.bytes([UInt8](repeating: 7, count: 1 << 20))])
        }
        let clock = ContinuousClock()
        let start = clock.now
        let closed = AsyncCollector<String>()
        Task {
            await client.close()
            closed.append("closed")
        }
        #expect(await closed.wait(for: 1) == ["closed"])
        #expect(clock.now - start < .seconds(30), "the flush is bounded (2 s), not waiting for the bus")
        #expect(!client.isConnected)
        await other.close()
    }
}
