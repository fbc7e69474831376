import Bluetooth
import Replica

/// What went through the relay, as the conversation of a ``DeviceReplica`` (value handles, times since the
/// relay attached), kept for the recorded profile and the capture. Bounded: past ``maximumEvents`` only counted.
///
/// A value the ``RelayLink`` owns, in its isolation on the D-Bus loop: recorded as the link forwards, read with
/// ``RelayLink/recordedConversation()``.
public struct RelayRecording: Sendable {
    /// Events kept at most (a week-long rig must not grow without end).
    public static let maximumEvents = 200_000

    private let start: ContinuousClock.Instant
    private var events: [DeviceReplica.Event] = []
    /// Each event's ticket (``record(_:)``), in step with `events`.
    private var tickets: [Int] = []
    private var nextTicket = 0
    private var dropped = 0
    private var connection = 0
    private var connectedCentrals = 0

    public init(start: ContinuousClock.Instant = .now) { self.start = start }

    /// The conversation so far, and how many events did not fit.
    public var conversation: Conversation { Conversation(events: events, dropped: dropped) }

    /// A central connected to the mirror (a new connection of the recording when none was connected).
    mutating func connected(_ central: BluetoothAddress) {
        connectedCentrals += 1
        if connectedCentrals == 1 { connection += 1 }
        append(.connected(central))
    }

    mutating func disconnected() {
        guard connectedCentrals > 0 else { return }
        connectedCentrals -= 1
        if connectedCentrals == 0 { append(.disconnected) }
    }

    /// Appends `kind`; the ticket takes it back (``retract(_:)``) while it is still unanswered.
    @discardableResult
    mutating func record(_ kind: DeviceReplica.Event.Kind) -> Int? { append(kind) }

    /// Takes back the event of `ticket` (a write recorded before it was sent, then refused for security: the
    /// phone writes again once paired). Looks from the end, where it is.
    mutating func retract(_ ticket: Int) {
        guard let index = tickets.lastIndex(of: ticket) else { return }
        events.remove(at: index)
        tickets.remove(at: index)
    }

    @discardableResult
    private mutating func append(_ kind: DeviceReplica.Event.Kind) -> Int? {
        guard events.count < Self.maximumEvents else {
            dropped += 1
            return nil
        }
        let elapsed = (ContinuousClock.now - start).components
        let time = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        events.append(DeviceReplica.Event(kind, time: time, connection: max(1, connection)))
        nextTicket += 1
        tickets.append(nextTicket)
        return nextTicket
    }
}

extension RelayRecording {
    /// The recording so far: its events, and how many more did not fit.
    public struct Conversation: Sendable {
        public var events: [DeviceReplica.Event]
        public var dropped: Int

        public init(events: [DeviceReplica.Event] = [], dropped: Int = 0) {
            self.events = events
            self.dropped = dropped
        }
    }
}
