import Profile

/// The methods each `/v1` path answers, read from the committed OpenAPI document (so `Allow` headers and
/// 405 answers cannot drift from it; a test checks the document against the routes).
enum RouteMethods {
    /// Path templates (`/v1/faults/{id}` as segments; `nil` for a parameter) and their methods, sorted.
    static let table: [(segments: [Substring?], methods: [String])] = {
        guard let document = try? JSONParser.parse(OpenAPIDocument.text, file: "openapi.json"),
              case .object(let paths) = document["paths"]?.value
        else { return [] }
        return paths.map { path in
            let segments = path.key.split(separator: "/").map { $0.hasPrefix("{") ? nil : $0 }
            var methods: [String] = []
            if case .object(let operations) = path.value.value {
                methods = operations.map { $0.key.uppercased() }.filter { ["GET", "POST", "PUT", "DELETE", "PATCH"].contains($0) }
            }
            return (segments, methods.sorted())
        }
    }()

    /// The methods `path` answers, `OPTIONS` included; nil when no route has that path.
    static func allowed(for path: String) -> [String]? {
        let segments = path.split(separator: "/")
        guard let route = table.first(where: { route in
            route.segments.count == segments.count && zip(route.segments, segments).allSatisfy { $0 == nil || $0 == $1 }
        }) else { return nil }
        return route.methods + ["OPTIONS"]
    }
}
