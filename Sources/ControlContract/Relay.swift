/// `POST /v1/relay/snapshot`: what `gattemu relay` wrote of the session so far, at the paths it was started with.
public struct RelaySnapshotResult: ContractType, Equatable {
    public var ok: Bool
    /// Operations recorded so far.
    public var operations: Int
    /// Operations past the recording's bound: counted, not kept.
    public var notRecorded: Int
    /// Where the profile was written (`-o`); absent without it.
    public var profile: String?
    /// Where the btsnoop capture was written (`--capture`), and how many records it has; absent without it.
    public var capture: String?
    public var captureRecords: Int?

    public init(operations: Int, notRecorded: Int, profile: String? = nil, capture: String? = nil, captureRecords: Int? = nil) {
        ok = true
        self.operations = operations
        self.notRecorded = notRecorded
        self.profile = profile
        self.capture = capture
        self.captureRecords = captureRecords
    }

    public static let schemaName = "RelaySnapshot"
    public static var schema: Schema {
        .object([
            required("ok", .trueFlag), required("operations", .integer(minimum: 0)), required("notRecorded", .integer(minimum: 0)),
            optional("profile", .string(minLength: 1)), optional("capture", .string(minLength: 1)),
            optional("captureRecords", .integer(minimum: 0)),
        ])
    }
    public static var examples: [RelaySnapshotResult] {
        [
            RelaySnapshotResult(operations: 42, notRecorded: 0, profile: "lock.json", capture: "lock.btsnoop", captureRecords: 97),
            RelaySnapshotResult(operations: 7, notRecorded: 0, profile: "lock.json"),
        ]
    }
}
