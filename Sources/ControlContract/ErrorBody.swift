/// Every error answer: `{"error": message, "status": code}` and, where they apply, the fields below.
public struct ErrorBody: ContractType, Equatable, Error {
    public var error: String
    public var status: Int
    /// Where in a fault spec.
    public var path: String?
    /// Which field of a body was bad.
    public var field: String?
    /// Valid names, for unknown ones.
    public var known: [String]?
    /// Connected centrals, for one that is not.
    public var connected: [String]?
    /// `Host` values the server accepts (421).
    public var acceptedHosts: [String]?
    /// Methods of the path (405).
    public var allowed: [String]?
    /// The limit that was reached (503 on the event stream).
    public var limit: Int?
    /// Reference of an internal error in gattemu's log (500).
    public var reference: String?

    public init(error: String, status: Int) {
        self.error = error
        self.status = status
    }

    public static let schemaName = "Error"
    public static var schema: Schema {
        .object([
            required("error", .string),
            required("status", .integer(minimum: 400, maximum: 599)),
            optional("path", .described("Where in a fault spec", .string)),
            optional("field", .described("Which field of the body", .string)),
            optional("known", .described("Valid names, for unknown ones", .array(.string))),
            optional("connected", .described("Connected centrals, for one that is not", .array(.string))),
            optional("acceptedHosts", .described("Host values the server accepts (421)", .array(.string))),
            optional("allowed", .described("Methods of the path (405)", .array(.string))),
            optional("limit", .described("The limit that was reached (503 on the event stream)", .integer(minimum: 0))),
            optional("reference", .described("Reference of an internal error in gattemu's log (500)", .string)),
        ])
    }
    public static var examples: [ErrorBody] {
        var full = ErrorBody(error: "unknown characteristic \"nope\"", status: 404)
        full.path = "on"
        full.field = "hex"
        full.known = ["rx", "tx"]
        full.connected = []
        full.acceptedHosts = ["127.0.0.1:8765"]
        full.allowed = ["GET", "OPTIONS"]
        full.limit = 16
        full.reference = "1a2b3c4d"
        return [full]
    }
}
