import DBus
import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Our end of a socket pair handed to bluetoothd by `AcquireNotify` or `AcquireWrite`.
///
/// `onPacket` gets every packet bluetoothd writes (acquired writes); `onClose` runs once when bluetoothd
/// closes its end. Sends never block: what the socket's buffer cannot take is dropped and counted. The
/// descriptor is closed under the same lock sends hold, so a send can never reach a descriptor number the
/// system has since given to another file. `@unchecked Sendable`: `source` is only touched in `init` and
/// `close()`, which the dispatch source's own serial queue and the state mutex order.
final class AcquiredSocket: @unchecked Sendable {
    private let descriptor: Int32
    let mtu: UInt16
    private let source: DispatchSourceRead
    private let state = Locked(State())

    private struct State: Sendable {
        /// Set by ``close()``: nothing more is sent.
        var closed = false
        /// Set once the descriptor itself is closed (by the source's cancel handler).
        var released = false
        /// Notifications dropped because the socket's buffer was full.
        var dropped = 0
    }

    /// What became of one ``send(_:)``.
    enum SendResult: Equatable {
        case sent
        /// The buffer is full (the central is not reading): dropped; the count so far on this socket.
        case full(dropped: Int)
        case closed
    }

    /// Creates the pair; returns ours and the end to send to bluetoothd.
    static func makePair(
        mtu: UInt16, queue: DispatchQueue, onPacket: @escaping @Sendable ([UInt8]) -> Void, onClose: @escaping @Sendable () -> Void
    ) throws(DBusError) -> (AcquiredSocket, DBusFileDescriptor) {
        var ends: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw .system("socketpair", errno: errno)
        }
        let ours = AcquiredSocket(descriptor: ends[0], mtu: mtu, queue: queue, onPacket: onPacket, onClose: onClose)
        return (ours, DBusFileDescriptor(owning: ends[1]))
    }

    /// Wraps a socket bluetoothd handed us as a central (`AcquireNotify` on a remote characteristic): each
    /// packet is one notification. Takes ownership of `descriptor`; nil when it was taken already.
    static func adopting(
        _ descriptor: DBusFileDescriptor, mtu: UInt16, queue: DispatchQueue,
        onPacket: @escaping @Sendable ([UInt8]) -> Void, onClose: @escaping @Sendable () -> Void
    ) -> AcquiredSocket? {
        let raw = descriptor.takeRawValue()
        guard raw >= 0 else { return nil }
        return AcquiredSocket(descriptor: raw, mtu: mtu, queue: queue, onPacket: onPacket, onClose: onClose)
    }

    private init(
        descriptor: Int32, mtu: UInt16, queue: DispatchQueue,
        onPacket: @escaping @Sendable ([UInt8]) -> Void, onClose: @escaping @Sendable () -> Void
    ) {
        self.descriptor = descriptor
        self.mtu = mtu
        source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        source.setEventHandler { [weak self] in
            guard let self else { return }
            var buffer = [UInt8](repeating: 0, count: 1024)
            let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count > 0 {
                onPacket(Array(buffer.prefix(count)))
            } else if count == 0 || (errno != EAGAIN && errno != EINTR) {
                self.close()
                onClose()
            }
        }
        let state = self.state
        source.setCancelHandler {
            state.withLock { state in
                state.released = true
                Glibc.close(descriptor)
            }
        }
        source.resume()
    }

    /// Sends one notification without blocking.
    func send(_ value: [UInt8]) -> SendResult {
        state.withLock { state in
            guard !state.closed, !state.released else { return .closed }
            let sent = value.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if sent == value.count { return .sent }
            if sent < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS {
                state.dropped += 1
                return .full(dropped: state.dropped)
            }
            return .closed
        }
    }

    var isClosed: Bool { state.withLock { $0.closed || $0.released } }

    func close() {
        let first = state.withLock { state in
            defer { state.closed = true }
            return !state.closed
        }
        if first { source.cancel() }
    }
}
