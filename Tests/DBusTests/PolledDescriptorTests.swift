import DBusTestSupport
import Synchronization
import Testing

@testable import DBus

#if canImport(Glibc)
    import Glibc
#endif

/// A socket's life on the loop (``PolledDescriptor``): closed only once no poll entry watches it, closed once, a
/// waiting sender told after the close, a dropped one closed too, and one the loop found gone never closed again.
@Suite struct PolledDescriptorTests {
    /// The far end has seen ours close (end of file).
    static func farEndSeesTheClose(_ theirs: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(theirs, &byte, 1, Int32(MSG_DONTWAIT)) == 0
    }

    @Test func closeReleasesTheDescriptorOnTheLoopOnceNothingPollsIt() async throws {
        let loop = try DBusEventLoop(name: "polled test")
        let ends = try EventLoopReaderTests.pair()
        defer { close(ends[1]) }
        let socket = PolledDescriptor(ends[0], loop: loop, extra: 0)
        let packets = Atomic<Int>(0)
        #expect(
            socket.poll { descriptor in
                var buffer = [UInt8](repeating: 0, count: 8)
                while recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 { packets.add(1, ordering: .relaxed) }
            })
        #expect(!socket.poll { _ in }, "one input entry per descriptor")
        EventLoopReaderTests.send(ends[1], [1])
        try await eventually { packets.load(ordering: .relaxed) == 1 }
        #expect(
            socket.whileOpen { _, count in
                count += 1
                return count
            } == 1)

        let releasedOnLoop = Atomic<Bool>(false)
        #expect(socket.markClosed())
        #expect(!socket.markClosed(), "closed once")
        #expect(socket.whileOpen { _, _ in true } == nil, "nothing is sent once it is closed")
        socket.release { releasedOnLoop.store(loop.isCurrent, ordering: .relaxed) }
        try await eventually { releasedOnLoop.load(ordering: .relaxed) }
        #expect(Self.farEndSeesTheClose(ends[1]))
        #expect(socket.isClosed)
        #expect(!socket.close(), "closing again does nothing")
        #expect(socket.withExtra { $0 } == 1, "the owner's state outlives the descriptor")
    }

    /// Runs on the loop after everything asked of it before, and after the poll that followed them.
    static func loopBarrier(_ loop: DBusEventLoop) async {
        for _ in 0..<2 {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in loop.removeReaders([]) { done.resume() } }
        }
    }

    /// Paused, the loop does not read what arrives (it stays in the socket, whose buffer then holds the far end
    /// back); resumed, it does. A closed one is not watched again.
    @Test func pausedReadingLeavesInputInTheSocketUntilResumed() async throws {
        let loop = try DBusEventLoop(name: "polled test")
        let ends = try EventLoopReaderTests.pair()
        defer { close(ends[1]) }
        let socket = PolledDescriptor(ends[0], loop: loop, extra: ())
        let packets = Atomic<Int>(0)
        socket.poll { descriptor in
            var buffer = [UInt8](repeating: 0, count: 8)
            while recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 { packets.add(1, ordering: .relaxed) }
        }
        EventLoopReaderTests.send(ends[1], [1])
        try await eventually { packets.load(ordering: .relaxed) == 1 }
        socket.pauseReading()
        #expect(socket.isReadingPaused)
        EventLoopReaderTests.send(ends[1], [2])
        await Self.loopBarrier(loop)
        #expect(packets.load(ordering: .relaxed) == 1, "read while paused")
        var peeked: UInt8 = 0
        #expect(recv(ends[0], &peeked, 1, Int32(MSG_DONTWAIT | MSG_PEEK)) == 1 && peeked == 2, "the input waits in the socket")
        socket.resumeReading()
        #expect(!socket.isReadingPaused)
        try await eventually { packets.load(ordering: .relaxed) == 2 }

        socket.pauseReading()
        #expect(socket.close())
        socket.resumeReading()  // closed: nothing to watch again
        await Self.loopBarrier(loop)
        #expect(Self.farEndSeesTheClose(ends[1]))
    }

    @Test func aWaitingSenderRunsAfterTheDescriptorClosed() async throws {
        let loop = try DBusEventLoop(name: "polled test")
        let ends = try EventLoopReaderTests.pair()
        defer { close(ends[1]) }
        let socket = PolledDescriptor(ends[0], loop: loop, extra: ())
        // Fill ours until the far end (which reads nothing) takes no more.
        let packet = [UInt8](repeating: 7, count: 512)
        var full = false
        for _ in 0..<100_000 where !full {
            full =
                socket.whileOpen { descriptor, _ in
                    packet.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) } < 0
                } ?? true
        }
        try #require(full)
        let ran = Mutex<(count: Int, closedThen: Bool)>((0, false))
        socket.whenWritable {
            ran.withLock { $0 = ($0.count + 1, socket.isClosed) }
        }
        let second = Atomic<Bool>(false)
        socket.whenWritable { second.store(true, ordering: .relaxed) }
        let toldAtOnce = second.load(ordering: .relaxed)
        #expect(toldAtOnce, "another sender while one waits: told at once")
        #expect(ran.withLock { $0.count } == 0, "still full: the first sender waits")
        #expect(socket.close())
        try await eventually { ran.withLock { $0.count } == 1 }
        #expect(ran.withLock { $0.closedThen }, "the waiting sender learns of the close from its next send")
        socket.whenWritable { ran.withLock { $0.count += 1 } }
        #expect(ran.withLock { $0.count } == 2, "closed already: at once")
    }

    @Test func oneDroppedWithoutCloseIsClosedOnTheLoop() async throws {
        let loop = try DBusEventLoop(name: "polled test")
        let ends = try EventLoopReaderTests.pair()
        defer { close(ends[1]) }
        var socket: PolledDescriptor<Int>? = PolledDescriptor(ends[0], loop: loop, extra: 0)
        socket?.poll { _ in }
        socket = nil
        try await eventually { Self.farEndSeesTheClose(ends[1]) }
    }

    @Test func aDescriptorTheLoopFoundGoneIsNeverClosedAgain() async throws {
        let loop = try DBusEventLoop(name: "polled test")
        let ends = try EventLoopReaderTests.pair()
        defer { close(ends[1]) }
        let socket = PolledDescriptor(ends[0], loop: loop, extra: 0)
        #expect(socket.markClosed(descriptorGone: true))
        let released = Atomic<Bool>(false)
        socket.release { released.store(true, ordering: .relaxed) }
        try await eventually { released.load(ordering: .relaxed) }
        // Its number is someone else's now, as far as the socket knows: still open here.
        #expect(fcntl(ends[0], F_GETFD) != -1)
        #expect(!Self.farEndSeesTheClose(ends[1]))
        close(ends[0])
    }
}
