import Bluetooth
import Replica
import Synchronization

/// What went through the relay, as the conversation of a ``DeviceReplica`` (value handles, times since the
/// relay attached), kept for the recorded profile and the capture. Bounded: past ``maximumEvents`` only counted.
public final class RelayRecording: Sendable {
    /// Events kept at most (a week-long rig must not grow without end).
    public static let maximumEvents = 200_000

    private let start: ContinuousClock.Instant
    private let state = Mutex(State())

    private struct State {
        var events: [DeviceReplica.Event] = []
        /// Each event's ticket (``record(_:)``), in step with `events`.
        var tickets: [Int] = []
        var nextTicket = 0
        var dropped = 0
        var connection = 0
        var connectedCentrals = 0
    }

    public init(start: ContinuousClock.Instant = .now) { self.start = start }

    /// The conversation so far, and how many events did not fit.
    public var conversation: (events: [DeviceReplica.Event], dropped: Int) {
        state.withLock { ($0.events, $0.dropped) }
    }

    /// A central connected to the mirror (a new connection of the recording when none was connected).
    func connected(_ central: BluetoothAddress) {
        state.withLock { state in
            state.connectedCentrals += 1
            if state.connectedCentrals == 1 { state.connection += 1 }
            append(&state, .connected(central))
        }
    }

    func disconnected() {
        state.withLock { state in
            guard state.connectedCentrals > 0 else { return }
            state.connectedCentrals -= 1
            if state.connectedCentrals == 0 { append(&state, .disconnected) }
        }
    }

    /// Appends `kind`; the ticket takes it back (``retract(_:)``) while it is still unanswered.
    @discardableResult
    func record(_ kind: DeviceReplica.Event.Kind) -> Int? {
        state.withLock { append(&$0, kind) }
    }

    /// Takes back the event of `ticket` (a write recorded before it was sent, then refused for security: the
    /// phone writes again once paired). Looks from the end, where it is.
    func retract(_ ticket: Int) {
        state.withLock { state in
            guard let index = state.tickets.lastIndex(of: ticket) else { return }
            state.events.remove(at: index)
            state.tickets.remove(at: index)
        }
    }

    @discardableResult
    private func append(_ state: inout State, _ kind: DeviceReplica.Event.Kind) -> Int? {
        guard state.events.count < Self.maximumEvents else {
            state.dropped += 1
            return nil
        }
        let elapsed = (ContinuousClock.now - start).components
        let time = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        state.events.append(DeviceReplica.Event(kind, time: time, connection: max(1, state.connection)))
        state.nextTicket += 1
        state.tickets.append(state.nextTicket)
        return state.nextTicket
    }
}
