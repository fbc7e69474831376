import ControlContract
import Emulator
import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing

@testable import Control

#if canImport(Glibc)
    import Glibc
#endif

/// Another local user is refused before the token check: the uid owning a loopback connection, asked of the kernel
/// (sock_diag).
@Suite struct LoopbackPeerTests {
    /// The request names exactly the client's socket: its own address and port as `src`, the server's as `dst`.
    @Test func theRequestNamesTheClientsSocket() throws {
        let request = try #require(
            LoopbackPeer.request(
                client: try SocketAddress(ipAddress: "127.0.0.1", port: 0xD431),
                server: try SocketAddress(ipAddress: "127.0.0.1", port: 8765)))
        #expect(request.count == 72)
        #expect(Array(request[16..<20]) == [UInt8(AF_INET), UInt8(IPPROTO_TCP), 0, 0])
        #expect(Array(request[24..<28]) == [0xD4, 0x31, 0x22, 0x3D], "sport then dport, big-endian")
        #expect(Array(request[28..<32]) == [127, 0, 0, 1] && Array(request[44..<48]) == [127, 0, 0, 1])
        let v6 = try #require(
            LoopbackPeer.request(client: try SocketAddress(ipAddress: "::1", port: 1), server: try SocketAddress(ipAddress: "::1", port: 2))
        )
        #expect(v6[16] == UInt8(AF_INET6) && v6[43] == 1 && v6[59] == 1)
        #expect(
            LoopbackPeer.request(
                client: try SocketAddress(ipAddress: "::1", port: 1), server: try SocketAddress(ipAddress: "127.0.0.1", port: 2)) == nil)
    }

    @Test func onlyThisMachinesClientsAreLookedUpAndErrorRepliesGiveNothing() throws {
        let server = try SocketAddress(ipAddress: "127.0.0.1", port: 8765)
        // TEST-NET-2: no interface of a machine has it.
        #expect(LoopbackPeer.owner(server: server, client: try SocketAddress(ipAddress: "198.51.100.7", port: 0xD431)) == nil)
        #expect(!LoopbackPeer.isLocal(try SocketAddress(ipAddress: "198.51.100.7", port: 1)))
        #expect(LoopbackPeer.isLocal(try SocketAddress(ipAddress: "::ffff:127.0.0.1", port: 1)))
        #expect(LoopbackPeer.isLoopback(try SocketAddress(ipAddress: "127.8.9.1", port: 1)))
        #expect(LoopbackPeer.isLoopback(try SocketAddress(ipAddress: "::ffff:127.0.0.1", port: 1)))
        #expect(!LoopbackPeer.isLoopback(try SocketAddress(ipAddress: "::ffff:10.0.0.1", port: 1)))
        var error = [UInt8](repeating: 0, count: 100)
        error[0] = 100
        error[4] = UInt8(LoopbackPeer.nlmsgError)
        #expect(LoopbackPeer.owner(inReply: error) == nil)
        #expect(LoopbackPeer.owner(inReply: Array(error.prefix(20))) == nil)
    }

    /// The kernel's answer: this process's own connection is found, and is its own uid.
    @Test func aLiveConnectionsOwnerIsFound() async throws {
        let emulator = try makeEmulator()
        try await withLiveServer(emulator) { _, port in
            let connection = try RawConnection(port: port)
            var local = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(connection.descriptor, $0, &length) }
            }
            let client = SocketAddress(local, host: "127.0.0.1")
            #expect(LoopbackPeer.owner(server: try SocketAddress(ipAddress: "127.0.0.1", port: port), client: client) == .user(geteuid()))
            // A socket that does not exist (nobody connected from that port): not found, nothing made up, and a client on
            // this machine nobody can name is refused, not left to the token alone.
            #expect(
                LoopbackPeer.owner(
                    server: try SocketAddress(ipAddress: "127.0.0.1", port: port),
                    client: try SocketAddress(ipAddress: "127.0.0.1", port: 1)) == .unknown)
        }
    }

    /// A client that sent its request and closed its socket: the kernel keeps the socket (FIN-WAIT, TIME-WAIT) with no
    /// file and, for a time-wait entry, reports uid 0, which must not read as root (a way in for any local user when
    /// the uid is the only guard, `--control-token none`). It is `gone`, and the connection is refused.
    @Test func aClosedClientSocketIsGoneNotRoot() async throws {
        let emulator = try makeEmulator()
        try await withLiveServer(emulator) { _, port in
            // A socket of its own (RawConnection closes its descriptor when it goes).
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            try #require(descriptor >= 0)
            var server = sockaddr_in()
            server.sin_family = sa_family_t(AF_INET)
            server.sin_port = in_port_t(UInt16(port).bigEndian)
            server.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
            let connected = withUnsafePointer(to: &server) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            var local = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            close(descriptor)
            try #require(connected == 0)
            let client = SocketAddress(local, host: "127.0.0.1")
            let owner = LoopbackPeer.owner(server: try SocketAddress(ipAddress: "127.0.0.1", port: port), client: client)
            #expect(owner == .gone, "a closed socket has no owner to let in: \(String(describing: owner))")
        }
        // The kernel's spelling of a time-wait entry: uid 0, inode 0.
        var reply = [UInt8](repeating: 0, count: 88)
        reply[0] = 88
        reply[4] = UInt8(LoopbackPeer.sockDiagByFamily)
        reply[17] = 6
        #expect(LoopbackPeer.owner(inReply: reply) == .gone)
        reply[80] = 0xE8
        reply[81] = 0x03
        reply[84] = 7
        #expect(LoopbackPeer.owner(inReply: reply) == .user(1000))
    }

    /// `--control 0.0.0.0` reached at this machine's own LAN address is still a local user's connection: the uid gate
    /// holds there as on loopback (another local user: 403, token or not).
    @Test func anotherLocalUserIsRefusedAtThisMachinesOwnAddressToo() async throws {
        let own = try #require(Self.nonLoopbackAddress(), "this machine has no IPv4 address but loopback")
        let emulator = try makeEmulator()
        var access = ControlAccess()
        access.localUsers = [geteuid() &+ 1]
        try await withLiveServer(emulator, token: "s3cret", access: access, host: "0.0.0.0") { _, port in
            let response = try await rawRequest(
                port: port,
                httpRequest("GET", "/v1/status", host: "\(own):\(port)", headers: [("Authorization", "Bearer s3cret")]), host: own)
            #expect(response.status == 403 && response.error.contains("refused"), "\(response.status) \(response.error)")
        }
    }

    /// A local client the kernel says nothing about, and an allowed group's member, on a guard of their own.
    @Test func anUnknownLocalOwnerIsRefusedAndAnAllowedGroupsMemberGetsTheToken() throws {
        func guarded(_ owner: LoopbackPeer.Owner, member: Bool) throws -> EmbeddedChannel {
            let channel = EmbeddedChannel()
            channel.localAddress = try SocketAddress(ipAddress: "127.0.0.1", port: 8765)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 40_000)).wait()
            var access = ControlAccess()
            access.localUsers = [geteuid() &+ 1]
            try channel.pipeline.syncOperations.addHandler(
                ConnectionGuard(
                    registry: ConnectionRegistry(maximum: 4), timeout: .seconds(5), logger: Logger(label: "test"), access: access,
                    token: "s3cret", peerLookup: { _, _ in owner }, membership: { _ in member }))
            return channel
        }
        let head = HTTPRequestPart.head(HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:8765", path: "/v1/status"))

        let unknown = try guarded(.unknown, member: true)
        try unknown.writeInbound(head)
        try unknown.writeInbound(HTTPRequestPart.end(nil))
        #expect(try unknown.readInbound(as: HTTPRequestPart.self) == nil, "nothing reaches the API")
        guard case .head(let refused)? = try unknown.readOutbound(as: HTTPResponsePart.self) else {
            Issue.record("no answer")
            return
        }
        #expect(refused.status == .forbidden)

        let member = try guarded(.user(geteuid() &+ 2), member: true)
        try member.writeInbound(head)
        guard case .head(let passed)? = try member.readInbound(as: HTTPRequestPart.self) else {
            Issue.record("the member's request did not reach the API")
            return
        }
        #expect(passed.headerFields[.authorization] == "Bearer s3cret")

        let stranger = try guarded(.user(geteuid() &+ 2), member: false)
        try stranger.writeInbound(head)
        try stranger.writeInbound(HTTPRequestPart.end(nil))
        #expect(try stranger.readInbound(as: HTTPRequestPart.self) == nil)
    }

    /// An IPv4 address of this machine other than loopback, if it has one.
    static func nonLoopbackAddress() -> String? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return nil }
        defer { freeifaddrs(list) }
        var entry = list
        while let current = entry {
            defer { entry = current.pointee.ifa_next }
            guard let raw = current.pointee.ifa_addr, Int32(raw.pointee.sa_family) == AF_INET else { continue }
            let address = raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            if UInt32(bigEndian: address.s_addr) >> 24 != 127 {
                var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
                var copy = address
                inet_ntop(AF_INET, &copy, &text, socklen_t(text.count))
                return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
        return nil
    }

    /// Every operation of the contract, read or write, with or without the right token: 403 for a local user other
    /// than gattemu's, and nothing changes.
    @Test func anotherLocalUserIsRefusedOnEveryRoute() async throws {
        let emulator = try makeEmulator()
        var access = ControlAccess()
        access.localUsers = [geteuid() &+ 1]
        try await withLiveServer(emulator, token: "s3cret", access: access) { _, port in
            for operation in ControlContract.operations {
                let path = operation.path.replacing(/\{[^}]+\}/, with: "x")
                for headers in [[], [("Authorization", "Bearer s3cret")]] {
                    let body = operation.body == nil ? nil : #"{"on": "read", "drop": true}"#
                    let response = try await rawRequest(
                        port: port,
                        httpRequest(
                            operation.method.rawValue, path, host: "127.0.0.1:\(port)",
                            headers: headers + (body == nil ? [] : [("Content-Type", "application/json")]), body: body))
                    #expect(response.status == 403, "\(operation.method.rawValue) \(path)")
                    #expect(response.error.contains("refused"), "\(operation.method.rawValue) \(path)")
                    #expect(response.headers["x-frame-options"] == "DENY")
                }
            }
            let options = try await rawRequest(port: port, httpRequest("OPTIONS", "/v1/status", host: "127.0.0.1:\(port)"))
            #expect(options.status == 403)
        }
        #expect(await emulator.faults().isEmpty)
    }
}
