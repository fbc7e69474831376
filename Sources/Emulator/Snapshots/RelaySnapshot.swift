/// What `gattemu relay` wrote of the session so far (`POST /v1/relay/snapshot`): the recorded profile and the
/// capture, at the paths it was started with (`-o`, `--capture`).
public struct RelaySnapshot: Sendable, Equatable {
    /// Operations recorded so far, and those past the recording's bound (counted, not kept).
    public var operations: Int
    public var notRecorded: Int
    /// Where the profile was written; nil without `-o`.
    public var profile: String?
    /// Where the capture was written, and its records; nil without `--capture`.
    public var capture: String?
    public var captureRecords: Int?

    public init(operations: Int, notRecorded: Int, profile: String? = nil, capture: String? = nil, captureRecords: Int? = nil) {
        self.operations = operations
        self.notRecorded = notRecorded
        self.profile = profile
        self.capture = capture
        self.captureRecords = captureRecords
    }
}

/// Writes the relayed session so far, one at a time (``Emulator/relaySnapshot()`` refuses a second meanwhile), in two
/// steps: the writer gathers what to write (it may ask the relay's link for its recording, on the loop) and returns
/// the synchronous work (building the profile and the capture, writing files), which ``Emulator/relaySnapshot()``
/// runs on a Dispatch thread of its own, off the D-Bus loop and off Swift's cooperative pool.
public typealias RelaySnapshotWriter = @Sendable () async -> RelaySnapshotWork

/// The synchronous part of a ``RelaySnapshotWriter``: may block, never on the loop.
public typealias RelaySnapshotWork = @Sendable () throws(ControlFailure) -> RelaySnapshot
