import Control
import ControlContract
import FoundationEssentials
import NIOCore
import NIOHTTP1
import NIOPosix
import Profile

/// A minimal HTTP/1.1 client of the control API: JSON requests, one-line errors, and an SSE reader.
///
/// The control API speaks plain HTTP (reach a remote rig through an SSH tunnel), so this needs no TLS stack.
struct CtlClient: Sendable {
    let endpoint: ControlURL
    let token: String?
    /// The rig's device every request is about (`--device`): `/v1/x` goes to `/v1/devices/DEVICE/x`.
    var device: String?

    init(endpoint: ControlURL, token: String?, device: String? = nil) {
        self.endpoint = endpoint
        self.token = token
        self.device = device
    }

    /// `path` of the device asked for: under `/v1/devices/DEVICE/` (the device list itself stays where it is).
    func scoped(_ path: String) -> String {
        guard let device, path.hasPrefix("/v1/"), path != "/v1/devices", !path.hasPrefix("/v1/openapi") else { return path }
        return "/v1/devices/" + CtlFormat.escape(device) + path.dropFirst("/v1".count)
    }

    /// Sends a request (`body` encoded from a contract type) and returns the answer decoded as `answer`, with
    /// its text; non-2xx answers (their ``ErrorBody``) and transport failures become `Failure.runtime`.
    func call<Answer: Decodable>(
        _ method: HTTPMethod, _ path: String, body: (any Encodable)? = nil, raw: [UInt8]? = nil,
        as answer: Answer.Type
    ) async throws -> (Answer, String) {
        var status: HTTPResponseStatus = .ok
        var bytes: [UInt8] = []
        var payload = raw
        if let body {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            payload = Array(try encoder.encode(body))
        }
        try await exchange(method, path, body: payload, timeout: .seconds(60)) { head in
            status = head.status
        } onBody: { chunk in
            bytes += chunk.readableBytesView
            guard bytes.count <= 64 << 20 else { throw Failure.runtime("the answer from \(endpoint) is larger than 64 MiB") }
        }
        let text = String(decoding: bytes, as: UTF8.self)
        guard (200..<300).contains(status.code) else {
            var message = (try? JSONDecoder().decode(ErrorBody.self, from: Data(bytes)))?.error ?? text
            if status == .unauthorized, token == nil {
                message += " (no token found for \(endpoint): give --token-file FILE or $\(ControlToken.environmentVariable))"
            }
            throw Failure.runtime("\(status.code) " + message.split(separator: "\n").joined(separator: " "))
        }
        do {
            return (try JSONDecoder().decode(Answer.self, from: Data(bytes)), text.trimmingSuffixNewline)
        } catch {
            throw Failure.runtime("unexpected answer from \(endpoint) (not a \(Answer.self)): \(text.prefix(200))")
        }
    }

    /// Follows `/v1/events/stream`, calling `handle` with each event's JSON text until the server closes it.
    func follow(since: Int?, _ handle: @Sendable (String) -> Void) async throws {
        var status: HTTPResponseStatus = .ok
        var pending: [UInt8] = []
        var refusal: [UInt8] = []
        let path = "/v1/events/stream" + (since.map { "?since=\($0)" } ?? "")
        do {
            try await exchange(.GET, path, accept: "text/event-stream", timeout: nil) { head in
                status = head.status
            } onBody: { chunk in
                guard status == .ok else {
                    refusal += chunk.readableBytesView
                    return
                }
                pending += chunk.readableBytesView
                while let end = Self.messageEnd(in: pending) {
                    let message = String(decoding: pending[..<end], as: UTF8.self)
                    pending.removeSubrange(..<(end + 2))
                    for line in message.split(separator: "\n") where line.hasPrefix("data: ") {
                        handle(String(line.dropFirst(6)))
                    }
                }
            }
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure.runtime("the event stream from \(endpoint) broke off: \(Self.describe(error))")
        }
        if status != .ok {
            let message = (try? JSONDecoder().decode(ErrorBody.self, from: Data(refusal)))?.error
            throw Failure.runtime("\(status.code) \(message ?? String(decoding: refusal, as: UTF8.self))")
        }
    }

    /// The index of the blank line (`\n\n`) that ends the first Server-Sent Events message in `bytes`.
    static func messageEnd(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 2 else { return nil }
        for index in 0..<(bytes.count - 1) where bytes[index] == 0x0A && bytes[index + 1] == 0x0A { return index }
        return nil
    }

    /// One request on its own connection: `head` sees the status line, `body` each chunk of the answer.
    private func exchange(
        _ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, accept: String = "application/json",
        timeout: TimeAmount?, onHead: (HTTPResponseHead) throws -> Void, onBody: (ByteBuffer) throws -> Void
    ) async throws {
        let channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.seconds(10))
                .connect(host: endpoint.host, port: endpoint.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        return try NIOAsyncChannel(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw Failure.runtime("cannot reach the control API at \(endpoint): \(Self.describe(error))")
        }
        let deadline = timeout.map { channel.channel.eventLoop.scheduleTask(in: $0) { channel.channel.close(promise: nil) } }
        defer { deadline?.cancel() }
        var headers = HTTPHeaders([("Host", endpoint.hostHeader), ("Accept", accept), ("Connection", "close")])
        if let token { headers.add(name: "Authorization", value: "Bearer \(token)") }
        let payload = body.map { ByteBuffer(bytes: $0) }
        if let payload {
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: String(payload.readableBytes))
        } else if method != .GET {
            headers.add(name: "Content-Length", value: "0")
        }
        let uri = endpoint.path + scoped(path)
        var complete = false
        do {
            try await channel.executeThenClose { inbound, outbound in
                try await outbound.write(.head(HTTPRequestHead(version: .http1_1, method: method, uri: uri, headers: headers)))
                if let payload { try await outbound.write(.body(.byteBuffer(payload))) }
                try await outbound.write(.end(nil))
                for try await part in inbound {
                    switch part {
                    case .head(let response): try onHead(response)
                    case .body(let chunk): try onBody(chunk)
                    case .end:
                        complete = true
                        return
                    }
                }
            }
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure.runtime("the control API at \(endpoint) broke off the answer: \(Self.describe(error))")
        }
        guard complete else {
            throw Failure.runtime(
                timeout.map { "no answer from the control API at \(endpoint) within \($0.nanoseconds / 1_000_000_000) s" }
                    ?? "the control API at \(endpoint) closed the connection")
        }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? IOError { return error.reason }
        let text = String(describing: error)
        return text.contains("connectionRefused") || text.contains("Connection refused") ? "connection refused" : text
    }
}

/// `http://HOST[:PORT][/PREFIX]`: where `gattemu ctl` finds the control API.
struct ControlURL: Sendable, CustomStringConvertible {
    var host: String
    var port: Int
    /// A path prefix (for a proxy), without the trailing slash; usually empty.
    var path: String

    init(_ text: String) throws {
        let hint = "expected a URL like http://127.0.0.1:8765"
        if text.hasPrefix("https://") {
            throw Failure.badInput(
                "--control \(text): the control API speaks plain HTTP; reach a remote rig through an SSH tunnel (ssh -L 8765:127.0.0.1:8765 rig)"
            )
        }
        guard text.hasPrefix("http://") else { throw Failure.badInput("--control \(text): \(hint)") }
        let rest = text.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" }
        var path = String(rest[authority.endIndex...])
        while path.hasSuffix("/") { path.removeLast() }
        let hostPart: Substring
        let portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw Failure.badInput("--control \(text): \(hint)") }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { throw Failure.badInput("--control \(text): \(hint)") }
            portPart = after.isEmpty ? nil : after.dropFirst()
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portPart = authority[authority.index(after: colon)...]
        } else {
            hostPart = authority
            portPart = nil
        }
        guard !hostPart.isEmpty, !hostPart.contains(where: { $0 == "@" || $0 == " " }) else {
            throw Failure.badInput("--control \(text): \(hint)")
        }
        var port = 80
        if let portPart {
            guard let number = Int(portPart), (1...65535).contains(number) else {
                throw Failure.badInput("--control \(text): the port must be a number from 1 to 65535")
            }
            port = number
        }
        self.host = String(hostPart)
        self.port = port
        self.path = path
    }

    /// The `Host` header: the host (bracketed when IPv6) and the port.
    var hostHeader: String { (host.contains(":") ? "[\(host)]" : host) + ":\(port)" }

    var description: String { "http://" + hostHeader + path }
}

extension String {
    var trimmingSuffixNewline: String { hasSuffix("\n") ? String(dropLast()) : self }
}
