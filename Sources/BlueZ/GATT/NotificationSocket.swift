import Dispatch
import DBus
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Our end of a socket pair handed to bluetoothd by `AcquireNotify` or `AcquireWrite`.
///
/// `onPacket` gets every packet bluetoothd writes (acquired writes); `onClose` runs once when bluetoothd
/// closes its end. `@unchecked Sendable`: the descriptor is immutable and `source` is only touched in
/// `init` and `close()`, which the dispatch source's own serial queue and the state mutex order.
final class AcquiredSocket: @unchecked Sendable {
    let descriptor: Int32
    let mtu: UInt16
    private let source: DispatchSourceRead
    private let closed = Mutex(false)

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
        source.setCancelHandler { Glibc.close(descriptor) }
        source.resume()
    }

    /// Sends one notification; false when bluetoothd has closed its end.
    func send(_ value: [UInt8]) -> Bool {
        guard !closed.withLock({ $0 }) else { return false }
        let sent = value.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return sent == value.count
    }

    var isClosed: Bool { closed.withLock { $0 } }

    func close() {
        let first = closed.withLock { closed in defer { closed = true }; return !closed }
        if first { source.cancel() }
    }
}
