import JSON

/// The OpenAPI 3.0 document, built from ``ControlContract/operations`` and the contract types' schemas.
///
/// `Sources/Control/openapi.json` is this text, committed for readers and tools (`scripts/embed-assets`
/// writes it; a test fails when it differs); the server answers `GET /v1/openapi.json` with it.
extension ControlContract {
    public static let title = "gattemu control API"

    static let overview = """
        Runtime control of a running `gattemu run`: status, events, notifications, triggers, variables, faults; the dashboard at `/`. \
        Every error is JSON: {"error": message, "status": code, ...details}. When the server has a token (--control-token-file, \
        $GATTEMU_CONTROL_TOKEN or --control-token), every request but OPTIONS and the dashboard's static files needs \
        `Authorization: Bearer TOKEN`. Every request must name the server in `Host` (421 otherwise: DNS rebinding); a request with an \
        `Origin` other than the API's own (`http://` + an accepted host) or one listed with --control-allow-origin is refused (403), and \
        so is a cross-site browser request (`Sec-Fetch-Site`) without one; a request body must be `Content-Type: application/json` (415). \
        Every path answers OPTIONS (204 with `Allow`; CORS headers for an allowed origin's preflight, no token needed) and a method it \
        does not have with 405 and `Allow`. Names in paths may be percent-encoded. Limits: 64 connections, 16 event streams (503), \
        30 s idle timeout, 1 MiB bodies (413) (docs/control.md, "Security").
        """

    static let errorResponses: [(Int, String, String)] = [
        (400, "BadRequest", "Malformed JSON, a body or parameter that does not match its schema"),
        (401, "Unauthorized", "Missing or wrong bearer token"),
        (
            403, "Forbidden",
            "Refused web page: an Origin that is neither the API's own nor listed with --control-allow-origin, or a cross-site request (Sec-Fetch-Site) without one"
        ),
        (404, "NotFound", "Unknown characteristic, trigger, variable, fault, central, variant or endpoint (`known` lists the valid names)"),
        (
            409, "Conflict",
            "Well-formed but not possible with this profile: a characteristic without the flag, a value too long for it, a value of another type than the variable's, a fault id already installed"
        ),
        (413, "ContentTooLarge", "A request body over 1 MiB"),
        (415, "UnsupportedMediaType", "A request body without Content-Type: application/json (a charset other than utf-8 included)"),
        (
            421, "MisdirectedRequest",
            "Host missing or not an address of this server (DNS rebinding); `acceptedHosts` lists the accepted ones"
        ),
        (500, "InternalError", "Unexpected failure: `internal error` and a `reference`; the details are only in gattemu's log"),
        (
            503, "Unavailable",
            "gattemu is still starting (`Retry-After: 1`; the API listens before the device is registered), bluetoothd refused, or too many event-stream clients (`limit`, 16 by default)"
        ),
    ]

    /// The whole document as a JSON value.
    public static var documentValue: JSONNode {
        var paths: [(String, JSONNode)] = []
        for operation in operations {
            let entry = (operation.method.rawValue.lowercased(), describe(operation))
            if let index = paths.firstIndex(where: { $0.0 == operation.path }), case .object(var members) = paths[index].1.value {
                members.append(JSONMember(key: entry.0, value: entry.1))
                paths[index].1.value = .object(members)
            } else {
                paths.append((operation.path, .object([entry])))
            }
        }
        let responses: [(String, JSONNode)] = errorResponses.map { _, name, description in
            (name, .object([("description", .string(description)), ("content", jsonContent(ErrorBody.reference))]))
        }
        let schemas: [(String, JSONNode)] = types.map { ($0.schemaName, $0.schema.document) }
        return .object([
            ("openapi", .string("3.0.3")),
            ("info", .object([("title", .string(title)), ("version", .string("1")), ("description", .string(overview))])),
            ("servers", .array([.object([("url", .string("http://127.0.0.1:8765"))])])),
            ("security", .array([.object([]), .object([("bearer", .array([]))])])),
            ("paths", .object(paths)),
            (
                "components",
                .object([
                    ("securitySchemes", .object([("bearer", .object([("type", .string("http")), ("scheme", .string("bearer"))]))])),
                    ("responses", .object(responses)),
                    ("schemas", .object(schemas)),
                ])
            ),
            ("x-fault-catalog", faultCatalogDocument),
        ])
    }

    /// The document's text (what `/v1/openapi.json` answers and `openapi.json` holds, with a final newline).
    public static var documentText: String { documentValue.documentText + "\n" }

    /// One message of the event stream (`: keep-alive` comments are not messages).
    static var eventStreamMessage: Schema {
        .described(
            "One Server-Sent Events message per event",
            .object([
                required("id", .described("The event's seq", .string(pattern: "^[0-9]+$"))),
                required("event", .string(enumeration: EventKind.allCases.map(\.rawValue))),
                required("data", .described("The event as JSON (schema Event), on one line", .string(pattern: "^\\{.*\\}$"))),
            ]))
    }

    static func jsonContent(_ schema: Schema) -> JSONNode {
        .object([("application/json", .object([("schema", schema.document)]))])
    }

    static func describe(_ operation: Operation) -> JSONNode {
        var members: [(String, JSONNode)] = [("operationId", .string(operation.id)), ("summary", .string(operation.summary))]
        if operation.isPublic { members.append(("security", .array([.object([])]))) }
        if !operation.parameters.isEmpty {
            members.append(
                (
                    "parameters",
                    .array(
                        operation.parameters.map { parameter in
                            var fields: [(String, JSONNode)] = [
                                ("name", .string(parameter.name)), ("in", .string(parameter.location.rawValue)),
                            ]
                            if parameter.location == .path { fields.append(("required", .bool(true))) }
                            fields.append(("schema", parameter.schema.document))
                            if let description = parameter.description { fields.append(("description", .string(description))) }
                            return .object(fields)
                        })
                ))
        }
        if let body = operation.body {
            members.append(("requestBody", .object([("required", .bool(body.required)), ("content", jsonContent(body.schema))])))
        }
        let success: JSONNode =
            switch operation.content {
            case .json(let schema): .object([("description", .string(operation.successDescription)), ("content", jsonContent(schema))])
            case .eventStream:
                .object([
                    ("description", .string(operation.successDescription)),
                    ("content", .object([("text/event-stream", .object([("schema", eventStreamMessage.document)]))])),
                ])
            case .asset(let type):
                .object([
                    ("description", .string(operation.successDescription)),
                    ("content", .object([(type, .object([("schema", .object([("type", .string("string"))]))]))])),
                ])
            }
        var responses: [(String, JSONNode)] = [(String(operation.successStatus), success)]
        for status in operation.allErrors {
            guard let name = errorResponses.first(where: { $0.0 == status })?.1 else { continue }
            responses.append((String(status), .object([("$ref", .string("#/components/responses/\(name)"))])))
        }
        members.append(("responses", .object(responses)))
        return .object(members)
    }
}
