import DBusTestSupport
import Synchronization
import Testing

@testable import DBus

#if canImport(Glibc)
    import Glibc
#endif

/// Descriptors a loop polls for their owners (``DBusEventLoop/addReader(_:handler:)``): their input is handled on
/// the loop thread, in order, without eventfd wake-ups; a removed reader is polled no more; a descriptor closed
/// under the loop does not make it spin.
@Suite struct EventLoopReaderTests {
    /// A datagram socket pair: `[ours, theirs]`.
    static func pair() throws -> [Int32] {
        var ends: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
        return ends
    }

    static func send(_ descriptor: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    @Test func packetsAreReadOnTheLoopInOrderWithoutWakeUps() async throws {
        let loop = try DBusEventLoop(name: "reader test")
        let ends = try Self.pair()
        defer { close(ends[1]) }
        let received = Mutex<[UInt8]>([])
        let offLoop = Atomic<Int>(0)
        let reader = loop.addReader(ends[0]) { _ in
            if !loop.isCurrent { offLoop.add(1, ordering: .relaxed) }
            var buffer = [UInt8](repeating: 0, count: 16)
            while recv(ends[0], &buffer, buffer.count, Int32(MSG_DONTWAIT)) == 1 {
                let packet = buffer[0]
                received.withLock { $0.append(packet) }
            }
        }
        // The registration itself is submitted (one wake-up); the packets need none.
        try await eventually { loop.wakeUps.load(ordering: .relaxed) >= 1 }
        Self.send(ends[1], [0])
        try await eventually { received.withLock { $0.count } == 1 }
        let before = loop.wakeUps.load(ordering: .relaxed)
        for number in 1...200 { Self.send(ends[1], [UInt8(number)]) }
        try await eventually { received.withLock { $0.count } == 201 }
        #expect(received.withLock { $0 } == (0...200).map { UInt8($0) })
        let offLoopCalls = offLoop.load(ordering: .relaxed)
        let wakeUps = loop.wakeUps.load(ordering: .relaxed) - before
        #expect(offLoopCalls == 0)
        #expect(wakeUps == 0, "packets read on the loop need no eventfd wake-up")
        let removed = Atomic<Bool>(false)
        loop.removeReader(reader) {
            removed.store(loop.isCurrent, ordering: .relaxed)
            close(ends[0])
        }
        try await eventually { removed.load(ordering: .relaxed) }
        let thenOnLoop = removed.load(ordering: .relaxed)
        #expect(thenOnLoop, "`then` runs on the loop thread")
    }

    @Test func aRemovedReaderIsPolledNoMore() async throws {
        let loop = try DBusEventLoop(name: "reader test")
        let ends = try Self.pair()
        defer {
            close(ends[0])
            close(ends[1])
        }
        let calls = Atomic<Int>(0)
        let reader = loop.addReader(ends[0]) { _ in calls.add(1, ordering: .relaxed) }
        let gone = Atomic<Bool>(false)
        loop.removeReader(reader) { gone.store(true, ordering: .relaxed) }
        try await eventually { gone.load(ordering: .relaxed) }
        Self.send(ends[1], [1])  // never read: were the reader still polled, it would be called again and again
        try await Task.sleep(for: .milliseconds(200))
        let called = calls.load(ordering: .relaxed)
        #expect(called == 0)
    }

    @Test func aDescriptorThatIsNotOpenIsDroppedNotSpunOn() async throws {
        let loop = try DBusEventLoop(name: "reader test")
        let calls = Atomic<Int>(0)
        // A number no file has (descriptors are given lowest first): poll answers POLLNVAL for it, as for a
        // descriptor its owner closed under the loop.
        _ = loop.addReader(999_999) { _ in calls.add(1, ordering: .relaxed) }
        try await eventually { calls.load(ordering: .relaxed) >= 1 }
        try await Task.sleep(for: .milliseconds(300))
        let called = calls.load(ordering: .relaxed)
        #expect(called == 1, "POLLNVAL once, then the descriptor is out of the poll set")
        let ends = try Self.pair()
        let ran = Atomic<Bool>(false)
        let reader = loop.addReader(ends[0]) { _ in ran.store(true, ordering: .relaxed) }
        Self.send(ends[1], [1])
        try await eventually { ran.load(ordering: .relaxed) }
        let served = ran.load(ordering: .relaxed)
        #expect(served, "the loop goes on serving its other readers")
        let closed = Atomic<Bool>(false)
        loop.removeReader(reader) {
            close(ends[0])
            close(ends[1])
            closed.store(true, ordering: .relaxed)
        }
        try await eventually { closed.load(ordering: .relaxed) }
    }
}
