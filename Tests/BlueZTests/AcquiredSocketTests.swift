import DBus
import DBusTestSupport
import Synchronization
import Testing

@testable import BlueZ

#if canImport(Glibc)
    import Glibc
#endif

/// The sockets of `AcquireNotify`/`AcquireWrite`, read on the D-Bus loop: bluetoothd's packets reach the handler in
/// order on the loop thread, bluetoothd closing its end is reported once, and a closed socket sends and hands on
/// nothing.
@Suite struct AcquiredSocketTests {
    @Test func packetsArriveInOrderOnTheLoopAndTheCloseOnce() async throws {
        let loop = try DBusEventLoop(name: "socket test")
        let packets = Mutex<[[UInt8]]>([])
        let offLoop = Atomic<Int>(0)
        let closes = Atomic<Int>(0)
        let (ours, theirs) = try AcquiredSocket.makePair(
            mtu: 23, loop: loop,
            onPacket: { packet in
                if !loop.isCurrent { offLoop.add(1, ordering: .relaxed) }
                packets.withLock { $0.append(packet) }
            }, onClose: { closes.add(1, ordering: .relaxed) })
        // More than the loop reads at one wake-up, sent before it looks.
        let sent = (0..<(AcquiredSocket.packetsPerWake * 3)).map { [UInt8($0 & 0xFF), UInt8($0 >> 8), 0x5A] }
        for packet in sent {
            _ = packet.withUnsafeBytes { Glibc.send(theirs.rawValue, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        try await eventually { packets.withLock { $0.count } >= sent.count }
        #expect(packets.withLock { $0 } == sent)
        let offLoopCalls = offLoop.load(ordering: .relaxed)
        #expect(offLoopCalls == 0)
        close(theirs.takeRawValue())
        try await eventually { closes.load(ordering: .relaxed) > 0 }
        try await Task.sleep(for: .milliseconds(100))
        let closedOnce = closes.load(ordering: .relaxed)
        #expect(closedOnce == 1)
        #expect(ours.isClosed)
        #expect(ours.send([1, 2, 3]) == .closed)
        ours.close()  // after bluetoothd's close: nothing more happens
        let closedStill = closes.load(ordering: .relaxed)
        #expect(closedStill == 1)
    }

    @Test func closingOurEndStopsSendingAndHandingOn() async throws {
        let loop = try DBusEventLoop(name: "socket test")
        let packets = Atomic<Int>(0)
        let (ours, theirs) = try AcquiredSocket.makePair(
            mtu: 23, loop: loop, onPacket: { _ in packets.add(1, ordering: .relaxed) }, onClose: {})
        #expect(ours.send([1]) == .sent)
        ours.close()
        #expect(ours.send([2]) == .closed)
        var buffer = [UInt8](repeating: 0, count: 8)
        #expect(recv(theirs.rawValue, &buffer, buffer.count, Int32(MSG_DONTWAIT)) == 1, "what was sent before the close arrives")
        // Once the loop let go of it, our end is closed: bluetoothd's end sees the hang-up.
        let hungUp = try await eventually { recv(theirs.rawValue, &buffer, buffer.count, Int32(MSG_DONTWAIT)) == 0 }
        #expect(hungUp)
        let handedOn = packets.load(ordering: .relaxed)
        #expect(handedOn == 0)
    }

    /// What bluetoothd has not read yet, which the emulator waits on to keep a burst's order across characteristics.
    @Test func unreadBytesCountWhatTheOtherEndHasNotRead() async throws {
        let loop = try DBusEventLoop(name: "socket test")
        let (ours, theirs) = try AcquiredSocket.makePair(mtu: 23, loop: loop, onPacket: { _ in }, onClose: {})
        #expect(ours.unreadBytes == 0)
        #expect(ours.send([1, 2, 3]) == .sent)
        #expect(ours.send([4, 5]) == .sent)
        #expect(ours.unreadBytes > 0)
        var buffer = [UInt8](repeating: 0, count: 8)
        #expect(recv(theirs.rawValue, &buffer, buffer.count, Int32(MSG_DONTWAIT)) == 3)
        #expect(ours.unreadBytes > 0, "one packet still unread")
        #expect(recv(theirs.rawValue, &buffer, buffer.count, Int32(MSG_DONTWAIT)) == 2)
        #expect(ours.unreadBytes == 0)
        ours.close()
        #expect(ours.unreadBytes == 0)
    }
}
