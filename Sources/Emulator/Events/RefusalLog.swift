import DBus
import Synchronization

/// Logs the D-Bus messages gattemu refused (spoofed signals, calls from strangers) as `refused` events, at a
/// bounded rate: a flood is summarised, not copied into the log.
final class RefusalLog: Sendable {
    /// At most this many refusals are logged one by one per ``window``; the rest are counted.
    static let burst = 20
    static let window: Duration = .seconds(10)

    private let log: DeviceEventLog
    private let state = Mutex(State())

    private struct State {
        var windowStart: ContinuousClock.Instant?
        var logged = 0
        var suppressed = 0
    }

    init(log: DeviceEventLog) { self.log = log }

    func record(_ refusal: DBusRefusal) {
        let now = ContinuousClock.now
        let (logThis, summary) = state.withLock { state -> (Bool, Int) in
            var summary = 0
            if let start = state.windowStart, now - start < Self.window {
                // Same window.
            } else {
                summary = state.suppressed
                state = State(windowStart: now)
            }
            if state.logged < Self.burst {
                state.logged += 1
                return (true, summary)
            }
            state.suppressed += 1
            return (false, summary)
        }
        if summary > 0 { log.record(.refused, detail: "\(summary) more refused D-Bus messages were not logged one by one") }
        if logThis { log.record(.refused, detail: refusal.description) }
    }
}
