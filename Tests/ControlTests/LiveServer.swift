import Foundation
import Logging
import Testing

@testable import Control

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `body` with a real ``ControlServer`` listening on 127.0.0.1 (a free port), then stops it.
func withLiveServer<T>(
    _ target: any ControlTarget, token: String? = nil, access: ControlAccess = ControlAccess(),
    limits: ControlLimits = ControlLimits(), ready: Bool = true, host: String = "127.0.0.1",
    _ body: (ControlServer, Int) async throws -> T
) async throws -> T {
    let server = try ControlServer(
        endpoint: ControlEndpoint(host: host, port: 0), token: token, target: target,
        access: access, limits: limits, ready: ready)
    var logger = Logger(label: "test.control")
    logger.logLevel = .critical
    let (ready, continuation) = AsyncStream.makeStream(of: Int.self)
    let serving = Task {
        try await server.run(logger: logger) { address in
            continuation.yield(Int(address.split(separator: ":").last ?? "") ?? 0)
        }
    }
    var addresses = ready.makeAsyncIterator()
    guard let port = await addresses.next(), port > 0 else {
        serving.cancel()
        throw RawHTTPError("the server did not start")
    }
    do {
        let result = try await body(server, port)
        serving.cancel()
        _ = await serving.result
        return result
    } catch {
        serving.cancel()
        _ = await serving.result
        throw error
    }
}

struct RawHTTPError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// An HTTP/1.x request written by hand, so that tests choose every header (or leave `Host` out).
func httpRequest(
    _ method: String, _ path: String, host: String?, headers: [(String, String)] = [], body: String? = nil,
    version: String = "HTTP/1.1", close: Bool = true
) -> String {
    var lines = ["\(method) \(path) \(version)"]
    if let host { lines.append("Host: \(host)") }
    lines += headers.map { "\($0.0): \($0.1)" }
    if let body { lines.append("Content-Length: \(body.utf8.count)") }
    if close { lines.append("Connection: close") }
    return lines.joined(separator: "\r\n") + "\r\n\r\n" + (body ?? "")
}

/// An answer read off a raw connection.
struct RawResponse {
    var status: Int
    /// Lowercased names.
    var headers: [String: String]
    var body: String

    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:] }
    var error: String { json["error"] as? String ?? "" }

    init?(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { return nil }
        let head = text[..<split.lowerBound].components(separatedBy: "\r\n")
        guard let statusLine = head.first, statusLine.hasPrefix("HTTP/1."),
            let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "")
        else { return nil }
        self.status = status
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        self.headers = headers
        self.body = String(text[split.upperBound...])
    }
}

/// A plain TCP connection to 127.0.0.1; blocking calls run on a dispatch queue, off Swift's cooperative pool.
final class RawConnection: @unchecked Sendable {
    let descriptor: Int32

    /// Connects to `host` (IPv4); `receiveBuffer` shrinks the socket's receive buffer (a client that reads slowly).
    init(port: Int, receiveBuffer: Int32? = nil, host: String = "127.0.0.1") throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw RawHTTPError("socket: \(errno)") }
        if var size = receiveBuffer {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(host)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw RawHTTPError("connect: \(code)")
        }
    }

    deinit { Glibc.close(descriptor) }

    func send(_ text: String) throws {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw RawHTTPError("send: \(errno)") }
            bytes = bytes.dropFirst(sent)
        }
    }

    /// Reads until `done(bytes)` holds, the server closes (`closed`), or `timeout` passes. The blocking read runs on
    /// a thread of its own: GCD's shared pool has a thread per core and grows slowly, so parallel tests each holding
    /// a blocked read there queue behind one another.
    func read(timeout: Duration = .seconds(10), until done: @escaping @Sendable ([UInt8]) -> Bool = { _ in false }) async -> (
        bytes: [UInt8], closed: Bool
    ) {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: self.readBlocking(timeout: timeout, until: done))
            }
        }
    }

    private func readBlocking(timeout: Duration, until done: ([UInt8]) -> Bool) -> (bytes: [UInt8], closed: Bool) {
        let deadline = ContinuousClock.now + timeout
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !done(bytes) {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return (bytes, false) }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000) + 1
            guard poll(&poller, 1, milliseconds) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return (bytes, true) }
            bytes += buffer[..<count]
        }
        return (bytes, false)
    }
}

/// Sends one request (`Connection: close`) and reads the whole answer (waiting up to a minute: a loaded machine).
func rawRequest(port: Int, _ request: String, timeout: Duration = .seconds(60), host: String = "127.0.0.1") async throws
    -> RawResponse
{
    let connection = try RawConnection(port: port, host: host)
    try connection.send(request)
    let (bytes, _) = await connection.read(timeout: timeout)
    guard let response = RawResponse(bytes) else { throw RawHTTPError("no HTTP answer: \(String(decoding: bytes, as: UTF8.self))") }
    return response
}

/// The descriptors this process has open.
func openDescriptorCount() -> Int {
    ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).count
}
