import Bluetooth
import DBus

#if canImport(Glibc)
    import Glibc
#endif

/// One central's LE credit-based channel, as the kernel hands it to an ``L2CAPListener``: first a request waiting
/// for ``accept()`` or ``refuse()``, then an open channel whose SDUs arrive in order on `onSDU` (on the loop's
/// thread) and which takes SDUs with ``send(_:)`` without blocking. The descriptor's life on the loop is a
/// ``PolledDescriptor``'s (its extra state: whether the request was accepted).
public final class L2CAPChannelSocket: Sendable {
    /// The central's address and whether it is a random one.
    public let peer: BluetoothAddress
    public let peerIsRandom: Bool
    /// The largest SDU this side takes.
    public let receiveMTU: Int
    private let socket: PolledDescriptor<Bool>

    /// SDUs read at most each time the loop finds the socket readable.
    static let sdusPerWake = 32

    /// Whether this kernel gives a central credits only as SDUs are read (Linux 6.10 and later: an LE channel's
    /// credits follow the room left in the socket's buffer). Before, it gives them back as SDUs arrive, and drops
    /// those that find the buffer full: a reader that pauses loses SDUs instead of holding the central back.
    public static let kernelWithholdsCreditsUntilRead: Bool = {
        var names = utsname()
        guard uname(&names) == 0 else { return false }
        let release = withUnsafeBytes(of: &names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return kernel(release, isAtLeast: (6, 10))
    }()

    /// Whether a kernel release (`6.12.95+deb12-amd64`) is at least `version`.
    static func kernel(_ release: String, isAtLeast version: (major: Int, minor: Int)) -> Bool {
        let numbers = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        guard numbers.count == 2 else { return false }
        return (numbers[0], numbers[1]) >= version
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

    /// Whether the request waits for ``accept(onSDU:onClose:)`` or ``refuse()`` (it came while the listener deferred
    /// requests); false: the kernel accepted the channel itself, and refusing it closes it.
    public let isDeferred: Bool

    init(descriptor: Int32, peer: L2CAPSocketAddress, receiveMTU: Int, loop: DBusEventLoop) {
        // Only a connected channel has a send MTU (BT_SNDMTU: ENOTCONN before): a deferred request has none yet.
        var mtu: UInt16 = 0
        var length = socklen_t(2)
        isDeferred = getsockopt(descriptor, L2CAPKernel.solBluetooth, L2CAPKernel.optionSendMTU, &mtu, &length) != 0
        socket = PolledDescriptor(descriptor, loop: loop, extra: false)
        self.peer = peer.address
        self.peerIsRandom = peer.addressType == L2CAPKernel.addressTypeLERandom
        self.receiveMTU = receiveMTU
    }

    deinit { close() }

    /// Answers the central's request with success and starts reading: each SDU goes to `onSDU`, in order, which says
    /// whether to go on reading (false: reading pauses until ``resumeReading()``, and once the kernel's buffer is full
    /// the central gets no credits back); `onClose` runs once when the channel closes from the far end (or the link
    /// drops). False when the request is gone.
    public func accept(onSDU: @escaping @Sendable ([UInt8]) -> Bool, onClose: @escaping @Sendable () -> Void) -> Bool {
        let socket = self.socket
        let mtu = receiveMTU
        let deferred = isDeferred
        let accepted =
            socket.whileOpen { descriptor, accepted -> Bool in
                guard !accepted else { return false }
                // With BT_DEFER_SETUP, the first read of a waiting channel sends the success response and returns 0.
                var none: UInt8 = 0
                guard !deferred || recv(descriptor, &none, 0, Int32(MSG_DONTWAIT)) >= 0 else { return false }
                accepted = true
                return true
            } ?? false
        guard accepted else { return false }
        // Closed since (by this side): nothing to read. Polled otherwise until released.
        return socket.poll { descriptor in
            var buffer = [UInt8](repeating: 0, count: mtu + 1)
            for _ in 0..<Self.sdusPerWake {
                guard !socket.isMarkedClosed else { return }
                let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                let code = errno
                if count > 0 || (count == 0 && L2CAPSocketAddress.of(descriptor, peer: true) != nil) {
                    guard onSDU(Array(buffer.prefix(count))) else {
                        socket.pauseReading()
                        return
                    }
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
                if socket.markClosed() {
                    socket.release()
                    onClose()
                }
                return
            }
        }
    }

    /// Reads again after `onSDU` said to stop (a no-op otherwise).
    public func resumeReading() {
        socket.resumeReading()
    }

    /// Refuses a request that was not accepted: the central gets result 0x0006 (insufficient authorization), the
    /// kernel's answer to a deferred channel closed before it was accepted. One the kernel accepted itself
    /// (``isDeferred`` false) is closed instead (an L2CAP disconnection).
    public func refuse() {
        close()
    }

    /// The central's MTU: the largest SDU it takes (`BT_SNDMTU`); nil before the channel is open or after it closed.
    public var sendMTU: Int? {
        socket.whileOpen { descriptor, accepted -> Int? in
            guard accepted else { return nil }
            var mtu: UInt16 = 0
            var length = socklen_t(2)
            guard getsockopt(descriptor, L2CAPKernel.solBluetooth, L2CAPKernel.optionSendMTU, &mtu, &length) == 0 else { return nil }
            return Int(mtu)
        } ?? nil
    }

    /// Sends one SDU without blocking.
    public func send(_ sdu: [UInt8]) -> SendResult {
        socket.whileOpen { descriptor, accepted -> SendResult in
            guard accepted else { return .closed }
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
        } ?? .closed
    }

    /// Runs `then` once on the loop when the socket can take an SDU again, or has closed (so a waiting sender learns
    /// it from its next ``send(_:)``); at once when it is closed already.
    public func whenWritable(_ then: @escaping @Sendable () -> Void) {
        socket.whenWritable(then)
    }

    public var isClosed: Bool { socket.isClosed }

    /// Whether the kernel still has the channel connected: false once the far end closed it, even before the loop
    /// has read the hang-up (a central that closes a channel and at once asks for another).
    public var isConnected: Bool {
        socket.whileOpen { descriptor, accepted -> Bool in
            accepted && L2CAPSocketAddress.of(descriptor, peer: true) != nil
        } ?? false
    }

    /// Closes the channel (an open one gets an L2CAP disconnection; a waiting request is refused). Nothing more is
    /// sent or handed on; the descriptor is closed once the loop polls it no more.
    public func close() {
        socket.close()
    }
}
