import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// Who is at the other end of a TCP connection from this machine: the uid owning the client's socket, asked of the
/// kernel for that one socket (sock_diag, `SOCK_DIAG_BY_FAMILY` with the exact addresses and ports, as `ss` does).
/// Loopback is not a user boundary, and neither is this machine's own LAN address (`--control 0.0.0.0` reached at
/// it): a client whose address is one of this machine's is a local user. This lets the control API refuse other local
/// users before it looks at a token (docs/security.md, "Control API").
///
/// Why not `/proc/net/tcp`: reading and scanning the whole table per connection costs time in the number of sockets
/// on the machine, which any user can raise; in the sandbox 2,000 connections of a hostile user stalled the API for
/// minutes. The kernel finds one socket by its addresses in its hash tables.
enum LoopbackPeer {
    /// Who holds the client's socket, as the kernel answers for it.
    enum Owner: Equatable {
        /// A socket of a process of this uid.
        case user(UInt32)
        /// A socket no process holds any more (the client closed it: FIN-WAIT, TIME-WAIT). The kernel reports uid 0
        /// for a time-wait entry, which is nobody's; such a connection is refused (its client cannot read an answer).
        case gone
        /// A client on this machine whose socket the kernel did not report (no sock_diag, or it refused): nobody can
        /// say which user it is, so it is refused, not left to the token alone.
        case unknown
    }

    /// The owner of the client's socket; nil when the client is not on this machine (its address is not one of this
    /// machine's): then the token alone decides.
    static func owner(server: SocketAddress, client: SocketAddress) -> Owner? {
        guard isLocal(client) else { return nil }
        guard let request = request(client: client, server: server) else { return .unknown }
        let descriptor = socket(AF_NETLINK, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), netlinkSockDiag)
        guard descriptor >= 0 else { return .unknown }
        defer { close(descriptor) }
        // sockaddr_nl of the kernel: family AF_NETLINK, pid 0, no groups (12 bytes).
        var kernel = [UInt8](repeating: 0, count: 12)
        withUnsafeBytes(of: sa_family_t(AF_NETLINK)) { kernel.replaceSubrange(0..<$0.count, with: $0) }
        let sent = request.withUnsafeBytes { bytes in
            kernel.withUnsafeBytes {
                sendto(
                    descriptor, bytes.baseAddress, bytes.count, 0, $0.baseAddress?.assumingMemoryBound(to: sockaddr.self),
                    socklen_t($0.count))
            }
        }
        guard sent == request.count else { return .unknown }
        // The kernel answers while handling the request: the reply is already queued (no wait).
        var reply = [UInt8](repeating: 0, count: 4096)
        let count = reply.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        return (count > 0 ? owner(inReply: Array(reply[..<count])) : nil) ?? .unknown
    }

    /// Whether `address` is this machine's: loopback, or an address one of its interfaces has now.
    static func isLocal(_ address: SocketAddress) -> Bool {
        if isLoopback(address) { return true }
        guard let (family, bytes, _) = parts(address) else { return false }
        let wanted = (family, bytes)
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return false }
        defer { freeifaddrs(list) }
        var entry = list
        while let current = entry {
            defer { entry = current.pointee.ifa_next }
            guard let raw = current.pointee.ifa_addr else { continue }
            let own: (UInt8, [UInt8])?
            switch Int32(raw.pointee.sa_family) {
            case AF_INET:
                own = raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    (UInt8(AF_INET), withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) } + [UInt8](repeating: 0, count: 12))
                }
            case AF_INET6:
                own = raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    (UInt8(AF_INET6), withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) })
                }
            default: own = nil
            }
            if let own, own.0 == wanted.0, own.1 == wanted.1 { return true }
        }
        return false
    }

    static let netlinkSockDiag: Int32 = 4
    static let sockDiagByFamily: UInt16 = 20
    static let nlmsgError: UInt16 = 2

    /// `nlmsghdr` + `inet_diag_req_v2` for exactly the client's socket: its local address and port are `src`, the
    /// server's are `dst`; every state; no cookie check.
    static func request(client: SocketAddress, server: SocketAddress) -> [UInt8]? {
        guard let (family, clientAddress, clientPort) = parts(client), let (serverFamily, serverAddress, serverPort) = parts(server),
            family == serverFamily
        else { return nil }
        var message: [UInt8] = []
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value) { message += $0 } }
        append(UInt32(72))  // nlmsg_len
        append(sockDiagByFamily)  // nlmsg_type
        append(UInt16(1))  // NLM_F_REQUEST
        append(UInt32(1))  // seq
        append(UInt32(0))  // pid
        message += [family, UInt8(IPPROTO_TCP), 0, 0]
        append(UInt32.max)  // every TCP state
        message += clientPort + serverPort  // big-endian ports
        message += clientAddress + serverAddress
        append(UInt32(0))  // any interface
        append(UInt32.max)  // INET_DIAG_NOCOOKIE
        append(UInt32.max)
        return message.count == 72 ? message : nil
    }

    /// The family, the 16-byte address field (network order) and the port (network order) of an address. An IPv4
    /// address mapped into IPv6 (`::ffff:a.b.c.d`: an IPv4 client of a dual-stack server) is IPv4: the client's socket
    /// is an IPv4 one, and the kernel files it there.
    static func parts(_ address: SocketAddress) -> (UInt8, [UInt8], [UInt8])? {
        switch address {
        case .v4(let v4):
            let bytes = withUnsafeBytes(of: v4.address.sin_addr) { Array($0) } + [UInt8](repeating: 0, count: 12)
            return (UInt8(AF_INET), bytes, withUnsafeBytes(of: v4.address.sin_port) { Array($0) })
        case .v6(let v6):
            let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
            let port = withUnsafeBytes(of: v6.address.sin6_port) { Array($0) }
            if bytes[..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
                return (UInt8(AF_INET), Array(bytes[12..<16]) + [UInt8](repeating: 0, count: 12), port)
            }
            return (UInt8(AF_INET6), bytes, port)
        default:
            return nil
        }
    }

    /// The owner the first `inet_diag_msg` in the reply names (nlmsghdr 16 bytes, then family/state/timer/retrans 4,
    /// the socket id 48, expires/rqueue/wqueue 12: `idiag_uid` at 80, `idiag_inode` at 84): `gone` when the socket
    /// has no inode (no process holds it; a time-wait entry's uid 0 is not root's); nil for an error reply or a
    /// short one.
    static func owner(inReply reply: [UInt8]) -> Owner? {
        guard reply.count >= 88 else { return nil }
        let length = reply.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 0, as: UInt32.self) }
        let type = reply.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 4, as: UInt16.self) }
        guard type == sockDiagByFamily, length >= 88, Int(length) <= reply.count else { return nil }
        let inode = reply.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 84, as: UInt32.self) }
        guard inode != 0 else { return .gone }
        return .user(reply.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 80, as: UInt32.self) })
    }

    /// 127.0.0.0/8, `::1` and `::ffff:127.x.y.z`.
    static func isLoopback(_ address: SocketAddress) -> Bool {
        switch address {
        case .v4(let v4): return UInt32(bigEndian: v4.address.sin_addr.s_addr) >> 24 == 127
        case .v6(let v6):
            let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
            if bytes[..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }
            return bytes[..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF && bytes[12] == 127
        default: return false
        }
    }
}
