import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// Who is at the other end of a TCP connection from this machine: the uid owning the client's socket, as the
/// kernel lists it in `/proc/net/tcp` or `/proc/net/tcp6` (the line whose local address is the client's and whose
/// remote address is the server's). Loopback is not a user boundary; this lets the control API refuse other local
/// users before it looks at a token (docs/security.md, "Control API").
enum LoopbackPeer {
    /// At most this much of each table is read (about 100,000 sockets): a lookup stays bounded on a busy machine.
    static let maximumTableBytes = 16 << 20

    /// The uid owning the client's socket; nil when the client is not on this machine (not a loopback address), or
    /// its socket is not found (already closed, or the tables are unreadable).
    static func uid(server: SocketAddress, client: SocketAddress, tables: (String) -> [UInt8]? = readTable) -> UInt32? {
        guard isLoopback(client), let clientKey = key(client), let serverKey = key(server) else { return nil }
        let table = if case .v4 = client { "/proc/net/tcp" } else { "/proc/net/tcp6" }
        guard let bytes = tables(table) else { return nil }
        for line in bytes.split(separator: 0x0A) {
            let fields = line.split(separator: 0x20)
            guard fields.count > 7, fields[1].elementsEqual(clientKey.utf8), fields[2].elementsEqual(serverKey.utf8) else { continue }
            return UInt32(String(decoding: fields[7], as: UTF8.self))
        }
        return nil
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

    /// `ADDRESS:PORT` as the kernel prints it: the address as 32-bit words in the machine's byte order, each `%08X`,
    /// and the port `%04X`.
    static func key(_ address: SocketAddress) -> String? {
        let words: [UInt32]
        let port: UInt16
        switch address {
        case .v4(let v4):
            words = [v4.address.sin_addr.s_addr]
            port = UInt16(bigEndian: v4.address.sin_port)
        case .v6(let v6):
            words = withUnsafeBytes(of: v6.address.sin6_addr) { raw in (0..<4).map { raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self) } }
            port = UInt16(bigEndian: v6.address.sin6_port)
        default:
            return nil
        }
        return words.map { hex($0, digits: 8) }.joined() + ":" + hex(UInt32(port), digits: 4)
    }

    static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    /// The file's bytes, at most ``maximumTableBytes``.
    static func readTable(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while bytes.count < maximumTableBytes {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        return bytes
    }
}
