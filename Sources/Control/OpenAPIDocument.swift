import Hummingbird

/// The committed OpenAPI 3 document (`openapi.json`), embedded by `scripts/embed-openapi` and served at `/v1/openapi.json`.
enum OpenAPIDocument {
    static func response() -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
