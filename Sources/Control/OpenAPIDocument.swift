import ControlContract
import Hummingbird

/// `GET /v1/openapi.json`: the document built from the contract (``ControlContract/documentText``), once, on
/// first request.
enum OpenAPIDocument {
    static let text = ControlContract.documentText

    static func response() -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
