@testable import Control
import ControlContract
import Emulator
import Foundation
import NIOCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Another local user is refused before the token check: the uid owning a loopback connection, from the kernel's
/// socket tables.
@Suite struct LoopbackPeerTests {
    @Test func addressesAreSpelledAsTheKernelPrintsThem() throws {
        #expect(LoopbackPeer.key(try SocketAddress(ipAddress: "127.0.0.1", port: 8765)) == "0100007F:223D")
        #expect(LoopbackPeer.key(try SocketAddress(ipAddress: "::1", port: 8765)) == "00000000000000000000000001000000:223D")
        #expect(LoopbackPeer.key(try SocketAddress(ipAddress: "::ffff:127.0.0.1", port: 80)) == "0000000000000000FFFF00000100007F:0050")
    }

    @Test func onlyLoopbackClientsAreLookedUp() throws {
        let server = try SocketAddress(ipAddress: "127.0.0.1", port: 8765)
        let table = Array("""
              sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
               0: 0100007F:D431 0100007F:223D 01 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0 20 4 30 10 -1
               1: 0100007F:223D 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 4243 1 0 20 4 30 10 -1

            """.utf8)
        let client = try SocketAddress(ipAddress: "127.0.0.1", port: 0xD431)
        #expect(LoopbackPeer.uid(server: server, client: client) { _ in table } == 1000)
        #expect(LoopbackPeer.uid(server: server, client: try SocketAddress(ipAddress: "127.0.0.1", port: 1)) { _ in table } == nil)
        #expect(LoopbackPeer.uid(server: server, client: try SocketAddress(ipAddress: "10.0.0.2", port: 0xD431)) { _ in table } == nil)
    }

    /// The real tables: this process's own connection is found, and is its own uid.
    @Test func aLiveConnectionsOwnerIsFound() async throws {
        let emulator = try makeEmulator()
        try await withLiveServer(emulator) { _, port in
            let connection = try RawConnection(port: port)
            var local = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(connection.descriptor, $0, &length) } }
            let client = SocketAddress(local, host: "127.0.0.1")
            #expect(LoopbackPeer.uid(server: try SocketAddress(ipAddress: "127.0.0.1", port: port), client: client) == geteuid())
        }
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
                    let response = try await rawRequest(port: port, httpRequest(
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
