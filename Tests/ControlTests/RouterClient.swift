import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded

/// Calls a router in-process: each request goes through the router's middleware chain and handlers as a served
/// request does, without a socket (the context's channel is a testing channel, so there is no peer address) and
/// with `Host: localhost`, that is port 80. An error that no middleware turned into a response becomes a bare 500,
/// as the live server answers it. Tests that need the socket, the connection guard or a peer address use
/// `LiveServer`. This replaces HummingbirdTesting's router mode: that product also brings AsyncHTTPClient, and with
/// it swift-nio-ssl, BoringSSL and HTTP/2 — about 500 CPU-seconds of the test build for a client these tests never
/// used.
struct RouterClient: Sendable {
    let responder: RouterResponder<BasicRequestContext>
    let logger = Logger(label: "gattemu.control.test")

    init(router: Router<BasicRequestContext>) {
        responder = router.buildResponder()
    }

    /// What the router answered: status, header fields and the whole body.
    struct Answer: Sendable {
        var status: HTTPResponse.Status
        var headers: HTTPFields
        var body: ByteBuffer
    }

    /// Sends one request and hands its answer to `check`.
    func execute<T>(
        uri: String, method: HTTPRequest.Method, headers: HTTPFields = [:], body: ByteBuffer? = nil,
        _ check: (Answer) async throws -> T
    ) async throws -> T {
        var headers = headers
        if let body { headers[.contentLength] = String(body.readableBytes) }
        let request = Request(
            head: HTTPRequest(method: method, scheme: "http", authority: "localhost", path: uri, headerFields: headers),
            body: RequestBody(buffer: body ?? ByteBuffer()))
        let context = BasicRequestContext(
            source: ApplicationRequestContextSource(channel: NIOAsyncTestingChannel(), logger: logger))
        let response: Response
        do {
            response = try await responder.respond(to: request, context: context)
        } catch {
            response = Response(status: .internalServerError)
        }
        let collected = BodyCollector()
        try await response.body.write(collected)
        return try await check(Answer(status: response.status, headers: response.headers, body: collected.storage.bytes))
    }
}

/// Gathers a response body as it is written; a reference, so the caller reads what the writer was given.
private struct BodyCollector: ResponseBodyWriter {
    final class Storage {
        var bytes = ByteBuffer()
    }
    let storage = Storage()

    mutating func write(_ part: ByteBuffer) async throws {
        storage.bytes.writeImmutableBuffer(part)
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
