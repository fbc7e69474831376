import Bluetooth
import DBus

#if canImport(Glibc)
    import Glibc
#endif

/// One central's LE credit-based channel, as the kernel hands it to an ``L2CAPListener``: first a request waiting
/// for ``accept()`` or ``refuse()``, then an open channel whose SDUs arrive in order on `onSDU` (on the loop's
/// thread) and which takes SDUs with ``send(_:)`` without blocking.
///
/// The descriptor is closed on the loop once the loop polls it no more, under the lock sends hold, so neither a poll
/// nor a send can reach a descriptor number the system has since given to another file.
public final class L2CAPChannelSocket: Sendable {
    /// The central's address and whether it is a random one.
    public let peer: BluetoothAddress
    public let peerIsRandom: Bool
    /// The largest SDU this side takes.
    public let receiveMTU: Int
    private let descriptor: Int32
    private let loop: DBusEventLoop
    private let state = Locked(State())

    /// SDUs read at most each time the loop finds the socket readable.
    static let sdusPerWake = 32

    private struct State: Sendable {
        var accepted = false
        var reader: DBusReader?
        /// Set by ``close()`` (or the far end closing): nothing more is sent or handed on.
        var closed = false
        /// The descriptor itself is closed.
        var released = false
        /// A sender waiting for room (``whenWritable(_:)``): its one-shot poll entry and what to run; taken out of
        /// the poll set with the reader before the descriptor closes, and run then.
        var waiter: (reader: DBusReader, then: @Sendable () -> Void)?
    }

    /// What became of one ``send(_:)``.
    public enum SendResult: Sendable, Equatable {
        case sent
        /// The central has given no credits and the socket's buffer is full: wait (``whenWritable(_:)``) and send again.
        case full
        /// Longer than the central's MTU (``sendMTU``): the kernel sends no part of it.
        case tooLarge
        case closed
    }

    init(descriptor: Int32, peer: L2CAPSocketAddress, receiveMTU: Int, loop: DBusEventLoop) {
        self.descriptor = descriptor
        self.peer = peer.address
        self.peerIsRandom = peer.addressType == L2CAPKernel.addressTypeLERandom
        self.receiveMTU = receiveMTU
        self.loop = loop
    }

    deinit { close() }

    /// Answers the central's request with success and starts reading: each SDU goes to `onSDU`, in order; `onClose`
    /// runs once when the channel closes from the far end (or the link drops). False when the request is gone.
    public func accept(onSDU: @escaping @Sendable ([UInt8]) -> Void, onClose: @escaping @Sendable () -> Void) -> Bool {
        let descriptor = self.descriptor
        let loop = self.loop
        let state = self.state
        let mtu = receiveMTU
        return self.state.withLock { current in
            guard !current.closed, !current.released, !current.accepted else { return false }
            // With BT_DEFER_SETUP, the first read of a waiting channel sends the success response and returns 0.
            var none: UInt8 = 0
            guard recv(descriptor, &none, 0, Int32(MSG_DONTWAIT)) >= 0 else { return false }
            current.accepted = true
            current.reader = loop.addReader(descriptor) { reader in
                var buffer = [UInt8](repeating: 0, count: mtu + 1)
                for _ in 0..<Self.sdusPerWake {
                    guard !state.withLock({ $0.closed }) else { return }
                    let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                    let code = errno
                    if count > 0 || (count == 0 && L2CAPSocketAddress.of(descriptor, peer: true) != nil) {
                        onSDU(Array(buffer.prefix(count)))
                        continue
                    }
                    // Nothing to read: still open, unless the channel closed without an error (the kernel's own
                    // disconnection, answered by the central): then the loop was woken by the hang-up, and would be
                    // again and again.
                    if count < 0, code == EAGAIN || code == EWOULDBLOCK || code == EINTR,
                        L2CAPSocketAddress.of(descriptor, peer: true) != nil
                    {
                        return
                    }
                    let first = state.withLock { state in
                        defer { state.closed = true }
                        return !state.closed
                    }
                    if first {
                        Self.release(descriptor, reader: reader, loop: loop, state: state)
                        onClose()
                    }
                    return
                }
            }
            return true
        }
    }

    /// Refuses a request that was not accepted: the central gets result 0x0006 (insufficient authorization), the
    /// kernel's answer to a deferred channel closed before it was accepted.
    public func refuse() {
        close()
    }

    /// The central's MTU: the largest SDU it takes (`BT_SNDMTU`); nil before the channel is open or after it closed.
    public var sendMTU: Int? {
        state.withLock { state in
            guard state.accepted, !state.closed, !state.released else { return nil }
            var mtu: UInt16 = 0
            var length = socklen_t(2)
            guard getsockopt(descriptor, L2CAPKernel.solBluetooth, L2CAPKernel.optionSendMTU, &mtu, &length) == 0 else { return nil }
            return Int(mtu)
        }
    }

    /// Sends one SDU without blocking.
    public func send(_ sdu: [UInt8]) -> SendResult {
        state.withLock { state in
            guard state.accepted, !state.closed, !state.released else { return .closed }
            let sent = sdu.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if sent == sdu.count { return .sent }
            if sent < 0 {
                switch errno {
                case EAGAIN, EWOULDBLOCK, ENOBUFS, EINTR: return .full
                case EMSGSIZE: return .tooLarge
                default: return .closed
                }
            }
            return .closed
        }
    }

    /// Runs `then` once on the loop when the socket can take an SDU again, or has closed (so a waiting sender learns
    /// it from its next ``send(_:)``); at once when it is closed already.
    public func whenWritable(_ then: @escaping @Sendable () -> Void) {
        let state = self.state
        let waiting = state.withLock { current -> Bool in
            guard !current.closed, !current.released, current.waiter == nil else { return false }
            let reader = loop.whenWritable(descriptor) {
                let waiter = state.withLock { current in
                    defer { current.waiter = nil }
                    return current.waiter
                }
                waiter?.then()
            }
            current.waiter = (reader, then)
            return true
        }
        if !waiting { then() }
    }

    public var isClosed: Bool { state.withLock { $0.closed || $0.released } }

    /// Whether the kernel still has the channel connected: false once the far end closed it, even before the loop
    /// has read the hang-up (a central that closes a channel and at once asks for another).
    public var isConnected: Bool {
        state.withLock { state in
            guard state.accepted, !state.closed, !state.released else { return false }
            return L2CAPSocketAddress.of(descriptor, peer: true) != nil
        }
    }

    /// Closes the channel (an open one gets an L2CAP disconnection; a waiting request is refused). Nothing more is
    /// sent or handed on; the descriptor is closed once the loop polls it no more.
    public func close() {
        let reader = state.withLock { state -> DBusReader?? in
            guard !state.closed else { return nil }
            state.closed = true
            return .some(state.reader)
        }
        guard let reader else { return }
        if let reader {
            Self.release(descriptor, reader: reader, loop: loop, state: state)
        } else {
            // Never polled: close it now (under the lock, as a send would hold it).
            state.withLock { state in
                guard !state.released else { return }
                state.released = true
                Glibc.close(descriptor)
            }
        }
    }

    private static func release(_ descriptor: Int32, reader: DBusReader, loop: DBusEventLoop, state: Locked<State>) {
        let waiter = state.withLock { current in
            defer { current.waiter = nil }
            return current.waiter
        }
        // The reader and a sender's writability waiter leave the poll set together, before the descriptor closes: a
        // poll entry left behind would watch whatever file gets that number next.
        loop.removeReaders([reader] + (waiter.map { [$0.reader] } ?? [])) {
            state.withLock { state in
                guard !state.released else { return }
                state.released = true
                Glibc.close(descriptor)
            }
            waiter?.then()  // its next send finds the channel closed
        }
    }
}
