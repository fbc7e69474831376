import Bluetooth
import DBus

#if canImport(Glibc)
    import Glibc
#endif

/// A listening LE credit-based channel server: a kernel L2CAP socket (`SOCK_SEQPACKET`) bound to an adapter's
/// address and a PSM, beside bluetoothd (the kernel runs L2CAP signalling; bluetoothd has no part in it).
///
/// While requests are deferred (`BT_DEFER_SETUP`, ``setDeferred(_:)``) the kernel hands each over at once as an
/// ``L2CAPChannelSocket`` in `onRequest`, before answering the central, so the owner accepts it
/// (``L2CAPChannelSocket/accept(onSDU:onClose:)``), refuses it (``L2CAPChannelSocket/refuse()``: result 0x0006) or
/// does either later. Otherwise the kernel accepts each itself and hands over an open channel. Deferring has a cost:
/// Linux (6.1 and 6.12 alike) arms a 40 s timer when a request arrives and, for an LE channel accepted after
/// deferral, never stops it, so the channel is closed 40 s after its request; one the kernel accepted itself lives as
/// long as the link. So an owner defers only while it may have to refuse or delay. The listener polls on `loop`, with
/// the D-Bus connection's descriptors; nothing blocks.
public final class L2CAPListener: Sendable {
    /// The PSM listened on (the kernel's pick when none was asked).
    public let psm: UInt16
    private let descriptor: Int32
    private let loop: DBusEventLoop
    private let reader: Locked<DBusReader?>
    private let closed = Locked(false)

    /// Requests taken off the kernel's queue at most each time the socket is readable.
    static let requestsPerWake = 16

    /// Binds and listens. `psm` nil lets the kernel pick a free one of 0x0080–0x00FF; `mtu` is the largest SDU taken;
    /// `deferred`: whether requests wait for the owner (``setDeferred(_:)``).
    public static func listen(
        on address: BluetoothAddress, random: Bool, psm: UInt16?, mtu: Int, security: L2CAPSecurityLevel, deferred: Bool,
        loop: DBusEventLoop, onRequest: @escaping @Sendable (L2CAPChannelSocket) -> Void
    ) throws(L2CAPError) -> L2CAPListener {
        let descriptor = socket(
            L2CAPKernel.addressFamily, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
            L2CAPKernel.protocolL2CAP)
        guard descriptor >= 0 else { throw L2CAPError(call: "socket", code: errno) }
        func fail(_ call: String) -> L2CAPError {
            let error = L2CAPError(call: call, code: errno)
            Glibc.close(descriptor)
            return error
        }
        let local = L2CAPSocketAddress(
            psm: psm ?? 0, address: address, addressType: random ? L2CAPKernel.addressTypeLERandom : L2CAPKernel.addressTypeLEPublic)
        let bound = local.bytes.withUnsafeBytes { raw in
            raw.withMemoryRebound(to: sockaddr.self) { bind(descriptor, $0.baseAddress, socklen_t(L2CAPSocketAddress.size)) }
        }
        guard bound == 0 else { throw fail("bind") }
        guard setSecurity(security, on: descriptor) else { throw fail("setsockopt BT_SECURITY") }
        var receiveMTU = UInt16(clamping: mtu)
        guard setsockopt(descriptor, L2CAPKernel.solBluetooth, L2CAPKernel.optionReceiveMTU, &receiveMTU, 2) == 0 else {
            throw fail("setsockopt BT_RCVMTU")
        }
        var defer32: UInt32 = deferred ? 1 : 0
        guard setsockopt(descriptor, L2CAPKernel.solBluetooth, L2CAPKernel.optionDeferSetup, &defer32, 4) == 0 else {
            throw fail("setsockopt BT_DEFER_SETUP")
        }
        guard Glibc.listen(descriptor, 8) == 0 else { throw fail("listen") }
        guard let bound = L2CAPSocketAddress.of(descriptor, peer: false) else { throw fail("getsockname") }
        return L2CAPListener(descriptor: descriptor, psm: bound.psm, mtu: mtu, loop: loop, onRequest: onRequest)
    }

    private init(
        descriptor: Int32, psm: UInt16, mtu: Int, loop: DBusEventLoop, onRequest: @escaping @Sendable (L2CAPChannelSocket) -> Void
    ) {
        self.descriptor = descriptor
        self.psm = psm
        self.loop = loop
        reader = Locked(nil)
        watch(mtu: mtu, onRequest: onRequest)
    }

    /// Polls the listening socket: each request is handed to `onRequest`.
    private func watch(mtu: Int, onRequest: @escaping @Sendable (L2CAPChannelSocket) -> Void) {
        let closed = self.closed
        let descriptor = self.descriptor
        let loop = self.loop
        let reader = self.reader
        /// Stops polling for a second (accept failed for want of descriptors or memory), then polls again.
        @Sendable func pause() {
            guard
                let current = reader.withLock({ current -> DBusReader? in
                    defer { current = nil }
                    return current
                })
            else { return }
            loop.removeReader(current) {}
            Task { [weak self] in
                try? await Task.sleep(for: .seconds(1))
                guard let self, !closed.value else { return }
                self.watch(mtu: mtu, onRequest: onRequest)
            }
        }
        let added = loop.addReader(descriptor) { _ in
            for _ in 0..<Self.requestsPerWake {
                guard !closed.value else { return }
                let child = accept(descriptor, nil, nil)
                guard child >= 0 else {
                    // EAGAIN: none left. Out of descriptors or memory, the request stays queued and the socket
                    // readable: polled again in a second, not at once (the loop would spin).
                    let code = errno
                    if code == EMFILE || code == ENFILE || code == ENOMEM || code == ENOBUFS { pause() }
                    return
                }
                _ = fcntl(child, F_SETFD, FD_CLOEXEC)
                _ = fcntl(child, F_SETFL, fcntl(child, F_GETFL) | O_NONBLOCK)
                guard let peer = L2CAPSocketAddress.of(child, peer: true) else {
                    Glibc.close(child)  // gone already
                    continue
                }
                onRequest(L2CAPChannelSocket(descriptor: child, peer: peer, receiveMTU: mtu, loop: loop))
            }
        }
        reader.withLock { $0 = added }
    }

    deinit { close() }

    /// Whether the requests that come from now on wait for the owner; false when the listener is closed, the kernel
    /// refused the option, or deferral was to end while a deferred request waits to be taken: the kernel hands a
    /// listener its waiting deferred requests only while it defers, so ending deferral then would leave that request
    /// unanswered until the kernel refuses it itself 40 s later. The owner asks again once it has taken it (the
    /// listener is readable meanwhile). A request deferred in the moment between that check and the change is left so.
    @discardableResult
    public func setDeferred(_ deferred: Bool) -> Bool {
        let descriptor = self.descriptor
        return closed.withLock { closed in
            guard !closed else { return false }
            if !deferred {
                var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&waiting, 1, 0) == 0 else { return false }
            }
            var value: UInt32 = deferred ? 1 : 0
            return setsockopt(descriptor, L2CAPKernel.solBluetooth, L2CAPKernel.optionDeferSetup, &value, 4) == 0
        }
    }

    /// The security level a link must have for the kernel to take a request from now on (`BT_SECURITY`); short of it
    /// the kernel refuses the request itself, before the owner sees it: result 0x0008 (insufficient encryption) for
    /// ``L2CAPSecurityLevel/medium`` where Linux tells the two apart (since 2025; 0x0005 before), 0x0005 (insufficient
    /// authentication) above. False when the listener is closed or the kernel refused the option.
    @discardableResult
    public func setSecurity(_ security: L2CAPSecurityLevel) -> Bool {
        let descriptor = self.descriptor
        return closed.withLock { closed in !closed && Self.setSecurity(security, on: descriptor) }
    }

    /// `BT_SECURITY` on `descriptor` (its `struct bt_security`: the level, no key size); false when the kernel refused it.
    private static func setSecurity(_ security: L2CAPSecurityLevel, on descriptor: Int32) -> Bool {
        var level: [UInt8] = [security.rawValue, 0]
        return setsockopt(descriptor, L2CAPKernel.solBluetooth, L2CAPKernel.optionSecurity, &level, 2) == 0
    }

    /// Listens no more; the descriptor is closed once the loop polls it no more. Open channels stay open.
    public func close() {
        let first = closed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        let descriptor = self.descriptor
        // Closed on the loop, after any removal already asked for (a paused listener's): never under a poll entry.
        let current = reader.withLock { $0 }
        loop.removeReaders(current.map { [$0] } ?? []) { Glibc.close(descriptor) }
    }
}
