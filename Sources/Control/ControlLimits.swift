/// Resource limits of the control API (docs/control.md, "Security"). The defaults are what `gattemu run`
/// uses; tests shorten the times.
public struct ControlLimits: Sendable, Equatable {
    /// Connections open at once. At the limit a new connection closes the longest-idle one (no request in
    /// progress); when every connection is busy it is closed at once. It is also the listen backlog: a connection
    /// waiting to be accepted beyond it would only make room by closing another, and a deeper queue filled by
    /// someone's connections keeps a fresh request waiting behind all of them (the kernel drops the surplus;
    /// clients retry).
    public var maximumConnections = 64
    /// `/v1/events/stream` clients at once; one more is answered 503.
    public var maximumEventStreams = 16
    /// A connection without a request in progress for this long is closed; so is one whose request does not
    /// arrive whole within it, or whose client reads nothing of the answer for this long.
    public var idleTimeout: Duration = .seconds(30)
    /// An event stream writes a comment line (`: keep-alive`) after this long without events, which also
    /// notices a client that went away.
    public var heartbeat: Duration = .seconds(15)
    /// An event stream ends after this long (clients reconnect with `Last-Event-ID`, as EventSource does);
    /// nil (`gattemu run`): never. The contract checker sets it so that a fuzzer's GET of the stream ends.
    public var eventStreamLifetime: Duration?

    public init() {}
}
