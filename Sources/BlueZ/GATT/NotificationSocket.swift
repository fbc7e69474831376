import DBus

#if canImport(Glibc)
    import Glibc
#endif

/// A notification socket: our end of a pair handed to bluetoothd by `AcquireNotify`, or the one bluetoothd hands
/// us for a remote characteristic.
///
/// `onPacket` gets every packet bluetoothd writes (a remote characteristic's notifications);
/// `onClose` runs once when bluetoothd closes its end. Both run on `loop`'s thread (the D-Bus connection's), which
/// polls the socket with its D-Bus descriptors: a packet costs no thread wake-up of its own, and what its handler
/// starts on an actor served by that loop starts at once. Sends never block: what the socket's buffer cannot take
/// is dropped and counted. The descriptor's life on the loop is a ``PolledDescriptor``'s.
final class AcquiredSocket: Sendable {
    let mtu: UInt16
    /// Its extra state: notifications dropped because the socket's buffer was full.
    private let socket: PolledDescriptor<Int>

    /// Packets read at most each time the loop finds the socket readable: others waiting on the loop get their turn
    /// (the loop polls again at once while packets remain).
    static let packetsPerWake = 64

    /// What became of one ``send(_:)``.
    enum SendResult: Equatable {
        case sent
        /// The buffer is full (the central is not reading): dropped; the count so far on this socket.
        case full(dropped: Int)
        case closed
    }

    /// Creates the pair; returns ours and the end to send to bluetoothd.
    static func makePair(
        mtu: UInt16, loop: DBusEventLoop, onPacket: @escaping @Sendable ([UInt8]) -> Void, onClose: @escaping @Sendable () -> Void
    ) throws(DBusError) -> (AcquiredSocket, DBusFileDescriptor) {
        var ends: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw .system("socketpair", errno: errno)
        }
        let ours = AcquiredSocket(descriptor: ends[0], mtu: mtu, loop: loop, onPacket: onPacket, onClose: onClose)
        return (ours, DBusFileDescriptor(owning: ends[1]))
    }

    /// Wraps a socket bluetoothd handed us as a central (`AcquireNotify` on a remote characteristic): each
    /// packet is one notification. Takes ownership of `descriptor`; nil when it was taken already.
    static func adopting(
        _ descriptor: DBusFileDescriptor, mtu: UInt16, loop: DBusEventLoop,
        onPacket: @escaping @Sendable ([UInt8]) -> Void, onClose: @escaping @Sendable () -> Void
    ) -> AcquiredSocket? {
        let raw = descriptor.takeRawValue()
        guard raw >= 0 else { return nil }
        return AcquiredSocket(descriptor: raw, mtu: mtu, loop: loop, onPacket: onPacket, onClose: onClose)
    }

    private init(
        descriptor: Int32, mtu: UInt16, loop: DBusEventLoop,
        onPacket: @escaping @Sendable ([UInt8]) -> Void, onClose: @escaping @Sendable () -> Void
    ) {
        self.mtu = mtu
        let socket = PolledDescriptor(descriptor, loop: loop, extra: 0)
        self.socket = socket
        // The handler holds the descriptor's state, not the socket: it lives as long as its owner keeps it, and a
        // socket dropped without close() is closed by deinit.
        socket.poll { descriptor in
            var buffer = [UInt8](repeating: 0, count: 1024)
            for _ in 0..<Self.packetsPerWake {
                // close() may come from another thread between two packets: nothing is handed on after it.
                guard !socket.isMarkedClosed else { return }
                let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if count > 0 {
                    onPacket(Array(buffer.prefix(count)))
                    continue
                }
                let code = errno
                if count < 0, code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return }
                // EBADF: not ours to close any more (closed under the loop, which polls it no more).
                if socket.markClosed(descriptorGone: count < 0 && code == EBADF) {
                    socket.release()
                    onClose()
                }
                return
            }
        }
    }

    deinit { close() }

    /// Sends one notification without blocking.
    func send(_ value: [UInt8]) -> SendResult {
        socket.whileOpen { descriptor, dropped -> SendResult in
            let sent = value.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if sent == value.count { return .sent }
            if sent < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS {
                dropped += 1
                return .full(dropped: dropped)
            }
            return .closed
        } ?? .closed
    }

    var isClosed: Bool { socket.isClosed }

    /// The bytes sent that bluetoothd has not read yet (`SIOCOUTQ`); 0 once closed.
    var unreadBytes: Int {
        socket.whileOpen { descriptor, _ -> Int in
            var count: Int32 = 0
            return ioctl(descriptor, UInt(TIOCOUTQ), &count) == 0 ? Int(max(count, 0)) : 0
        } ?? 0
    }

    /// Sends nothing more, hands nothing more on; the descriptor is closed once the loop polls it no more.
    func close() { socket.close() }
}
