/// One endpoint of the control API: method, path, and what it takes and answers.
///
/// ``ControlContract/operations`` lists them all; the server registers its routes from it (a test checks
/// every operation has a route and every route an operation), answers `OPTIONS` and 405 from it, and the
/// OpenAPI document is built from it.
public struct Operation: Sendable {
    public enum Method: String, Sendable, CaseIterable {
        case get = "GET"
        case post = "POST"
        case put = "PUT"
        case delete = "DELETE"
    }

    public struct Parameter: Sendable {
        public enum Location: String, Sendable { case path, query, header }
        public var name: String
        public var location: Location
        public var schema: Schema
        public var description: String?

        public init(_ name: String, in location: Location, _ schema: Schema, description: String? = nil) {
            self.name = name
            self.location = location
            self.schema = schema
            self.description = description
        }
    }

    /// What a successful answer carries.
    public enum Content: Sendable {
        case json(Schema)
        /// `text/event-stream`.
        case eventStream
        /// A file of the dashboard: its media type.
        case asset(String)
    }

    public var method: Method
    public var path: String
    public var id: String
    public var summary: String
    public var parameters: [Parameter]
    /// The JSON request body's schema, and whether it is required.
    public var body: (schema: Schema, required: Bool)?
    public var successStatus: Int
    public var successDescription: String
    public var content: Content
    /// Error statuses besides those every operation has (401, 403, 421, 500, and 503 while starting).
    public var errors: [Int]
    /// Served without the bearer token (the dashboard's static files: they hold no data).
    public var isPublic: Bool
    /// About one device: also served as `/v1/devices/{device}/…` (``ofDevice``) for each device of a rig, and at its
    /// own path for the one device of a process that runs one.
    public var deviceScoped: Bool

    public init(
        _ method: Method, _ path: String, id: String, summary: String, parameters: [Parameter] = [],
        body: (schema: Schema, required: Bool)? = nil, status: Int = 200, description: String, content: Content,
        errors: [Int] = [], isPublic: Bool = false, deviceScoped: Bool = true
    ) {
        self.method = method
        self.path = path
        self.id = id
        self.summary = summary
        self.parameters = parameters
        self.body = body
        self.successStatus = status
        self.successDescription = description
        self.content = content
        self.errors = errors
        self.isPublic = isPublic
        self.deviceScoped = deviceScoped
    }

    /// The same operation on one device of a rig: `/v1/x` as `/v1/devices/{device}/x`, id `xOfDevice`, 404 for a
    /// device the process does not run.
    public var ofDevice: Operation {
        var copy = self
        copy.path = "/v1/devices/{device}" + path.dropFirst("/v1".count)
        copy.id = id + "OfDevice"
        copy.summary = summary + " — of one device"
        copy.parameters = [ControlContract.deviceID] + parameters
        copy.errors = Array(Set(errors).union([404])).sorted()
        copy.deviceScoped = false
        return copy
    }

    /// The path's segments, `nil` for a `{parameter}`.
    public var segments: [Substring?] {
        path.split(separator: "/").map { $0.hasPrefix("{") ? nil : $0 }
    }

    /// Every error status this operation may answer.
    public var allErrors: [Int] {
        var statuses = Set(errors).union(isPublic ? [403, 421, 500] : [401, 403, 421, 500, 503])
        if body != nil { statuses.formUnion([400, 413, 415]) }
        if parameters.contains(where: { $0.location == .query }) { statuses.insert(400) }
        return statuses.sorted()
    }
}
