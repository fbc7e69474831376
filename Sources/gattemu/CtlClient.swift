import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A minimal client of the control API: JSON requests, one-line errors, and an SSE reader.
struct CtlClient: Sendable {
    let base: String
    let token: String?

    init(base: String, token: String?) throws {
        var base = base
        while base.hasSuffix("/") { base.removeLast() }
        guard base.hasPrefix("http://") || base.hasPrefix("https://"), URL(string: base)?.host != nil else {
            throw Failure.badInput("--control \(base): expected a URL like http://127.0.0.1:8765")
        }
        self.base = base
        self.token = token
    }

    /// Sends a request and returns the JSON body; non-2xx and transport failures become `Failure.runtime`.
    func call(_ method: HTTPMethod, _ path: String, body: Any? = nil) async throws -> Any {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let body {
            let data = try JSONSerialization.data(withJSONObject: body, options: [.fragmentsAllowed])
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: data))
        }
        let response: HTTPClientResponse
        do {
            response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        } catch {
            throw Failure.runtime("cannot reach the control API at \(base): \(Self.describe(error))")
        }
        let buffer = try await response.body.collect(upTo: 64 << 20)
        let json = try? JSONSerialization.jsonObject(with: Data(buffer.readableBytesView), options: [.fragmentsAllowed])
        guard (200..<300).contains(Int(response.status.code)) else {
            let message = (json as? [String: Any])?["error"] as? String ?? String(buffer: buffer)
            throw Failure.runtime("\(response.status.code) \(message.replacingOccurrences(of: "\n", with: " "))")
        }
        return json ?? [:]
    }

    /// Follows `/v1/events/stream`, calling `handle` with each event's JSON text until the server closes it.
    func follow(since: Int?, _ handle: @Sendable (String) -> Void) async throws {
        var request = HTTPClientRequest(url: base + "/v1/events/stream" + (since.map { "?since=\($0)" } ?? ""))
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        request.headers.add(name: "Accept", value: "text/event-stream")
        let response: HTTPClientResponse
        do {
            response = try await HTTPClient.shared.execute(request, timeout: .hours(24 * 365))
        } catch {
            throw Failure.runtime("cannot reach the control API at \(base): \(Self.describe(error))")
        }
        guard response.status == .ok else {
            let buffer = try await response.body.collect(upTo: 1 << 20)
            let json = try? JSONSerialization.jsonObject(with: Data(buffer.readableBytesView)) as? [String: Any]
            throw Failure.runtime("\(response.status.code) \(json?["error"] as? String ?? String(buffer: buffer))")
        }
        var pending = ""
        do {
            for try await chunk in response.body {
                pending += String(buffer: chunk)
                while let end = pending.range(of: "\n\n") {
                    let message = pending[..<end.lowerBound]
                    pending.removeSubrange(..<end.upperBound)
                    for line in message.split(separator: "\n") where line.hasPrefix("data: ") {
                        handle(String(line.dropFirst(6)))
                    }
                }
            }
        } catch {
            throw Failure.runtime("the event stream from \(base) broke off: \(Self.describe(error))")
        }
    }

    static func describe(_ error: any Error) -> String {
        let text = String(describing: error)
        return text.contains("connectionRefused") || text.contains("Connection refused") ? "connection refused" : text
    }
}
