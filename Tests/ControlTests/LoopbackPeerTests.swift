import ControlContract
import Emulator
import Foundation
import NIOCore
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

    @Test func onlyLoopbackClientsAreLookedUpAndErrorRepliesGiveNothing() throws {
        let server = try SocketAddress(ipAddress: "127.0.0.1", port: 8765)
        #expect(LoopbackPeer.owner(server: server, client: try SocketAddress(ipAddress: "10.0.0.2", port: 0xD431)) == nil)
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
            // A socket that does not exist (nobody connected from that port): not found, nothing made up.
            #expect(
                LoopbackPeer.owner(
                    server: try SocketAddress(ipAddress: "127.0.0.1", port: port),
                    client: try SocketAddress(ipAddress: "127.0.0.1", port: 1)) == nil)
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
