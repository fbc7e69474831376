import DBusTestSupport
import Synchronization
import Testing

@testable import DBus

/// A connection's loop as the executor of an actor: method calls are answered on the loop thread, without
/// a hand-off to another thread, and the loop outlives the connection it served.
@Suite struct EventLoopExecutorTests {
    /// State kept on the loop that serves its connection.
    actor Counter {
        let loop: DBusEventLoop
        nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
        private(set) var calls = 0
        private(set) var offLoop = 0

        init(loop: DBusEventLoop) { self.loop = loop }

        func count() -> Int {
            if !loop.isCurrent { offLoop += 1 }
            calls += 1
            return calls
        }
    }

    @Test func handlersAndTheActorRunOnTheLoopThread() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let loop = try DBusEventLoop(name: "test loop")
        let counter = Counter(loop: loop)
        let server = try await DBusConnection.connect(to: .address(bus.address), on: loop)
        let client = try await bus.connect()
        let handlerOffLoop = Atomic(0)
        try await server.export(
            [
                DBusInterface(
                    name: "test.Counter",
                    methods: [
                        DBusMethod("Count", output: "u") { _ in
                            if !loop.isCurrent { handlerOffLoop.add(1, ordering: .relaxed) }
                            return [.uint32(UInt32(await counter.count()))]
                        }
                    ])
            ], at: "/counter")

        for expected in 1...200 {
            let reply = try await client.call(destination: server.uniqueName, path: "/counter", interface: "test.Counter", member: "Count")
            #expect(reply == [.uint32(UInt32(expected))])
        }
        #expect(handlerOffLoop.load(ordering: .relaxed) == 0, "method handlers start on the loop thread")
        #expect(await counter.offLoop == 0, "the actor runs on the loop thread")

        // The connection goes; the loop, the actor's executor, stays.
        await server.close()
        #expect(await counter.count() == 201)
        #expect(await counter.offLoop == 0)
    }
}

/// Serving calls costs no wake-ups: what libdbus reads on the loop thread is dispatched before the loop waits
/// again, so the eventfd is written only when another thread has something for the loop.
@Suite struct EventLoopWakeUpTests {
    @Test func messagesReadOnTheLoopThreadDoNotWakeIt() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let loop = try DBusEventLoop(name: "test loop")
        let server = try await DBusConnection.connect(to: .address(bus.address), on: loop)
        let client = try await bus.connect()
        try await server.export(
            [
                DBusInterface(
                    name: "test.Echo",
                    methods: [
                        DBusMethod("Echo", input: "u", output: "u") { call in try call.arguments }
                    ])
            ], at: "/echo")

        let before = loop.wakeUps.load(ordering: .relaxed)
        for number in 1...200 {
            let reply = try await client.call(
                destination: server.uniqueName, path: "/echo", interface: "test.Echo", member: "Echo",
                arguments: [.uint32(UInt32(number))])
            #expect(reply == [.uint32(UInt32(number))])
        }
        let wakeUps = loop.wakeUps.load(ordering: .relaxed) - before
        #expect(wakeUps == 0, "200 calls served with \(wakeUps) eventfd wake-ups")
        await server.close()
    }
}
