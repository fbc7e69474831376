import AsyncAlgorithms
import Emulator
import Hummingbird
import Synchronization

/// The open `/v1/events/stream` responses, at most ``ControlLimits/maximumEventStreams``.
final class EventStreamSlots: Sendable {
    let maximum: Int
    private let taken = Mutex(0)

    init(maximum: Int) {
        self.maximum = maximum
    }

    var count: Int { taken.withLock { $0 } }

    /// A slot, or nil when all are taken.
    func take() -> EventStreamSlot? {
        let granted = taken.withLock { taken in
            guard taken < maximum else { return false }
            taken += 1
            return true
        }
        return granted ? EventStreamSlot(self) : nil
    }

    fileprivate func giveBack() {
        taken.withLock { $0 -= 1 }
    }
}

/// One taken slot, given back when the response body holding it is gone: written out, cut off by the
/// client going away, or never sent.
final class EventStreamSlot: Sendable {
    private let slots: EventStreamSlots

    fileprivate init(_ slots: EventStreamSlots) {
        self.slots = slots
    }

    deinit { slots.giveBack() }
}

/// A Server-Sent Events body: `id: SEQ`, `event: KIND`, `data: {json}` per event, and a `: keep-alive`
/// comment after each `heartbeat` without events (a write is how a client that went away is noticed).
///
/// Back-pressure: each write waits until the client reads (the channel is writable again); meanwhile
/// events wait in the log's subscription buffer, which keeps at most the newest ``EventLog/capacity`` (`--event-memory`).
enum EventStream {
    private enum Part: Sendable {
        case event(EmulatorEvent)
        case heartbeat
        case end
    }

    /// `lifetime`: end the response after this long (the client reconnects with `Last-Event-ID`); nil: never.
    /// `device`: only the events of this device of a rig.
    static func body(
        _ events: AsyncStream<EmulatorEvent>, device: String? = nil, heartbeat: Duration, lifetime: Duration?, slot: EventStreamSlot
    ) -> ResponseBody {
        let start = ContinuousClock.now
        let parts = merge(
            chain(events.map { Part.event($0) }, [Part.end].async),
            AsyncTimerSequence.repeating(every: lifetime.map { min($0, heartbeat) } ?? heartbeat).map { _ in
                lifetime.map { ContinuousClock.now - start >= $0 } == true ? Part.end : Part.heartbeat
            })
        return ResponseBody { [slot] writer in
            _ = slot  // held by this closure: given back when the body is gone
            loop: for await part in parts {
                switch part {
                case .event(let event):
                    if let device, event.device != device { continue }
                    try await writer.write(
                        ByteBuffer(string: "id: \(event.sequence)\nevent: \(event.kind.rawValue)\ndata: \(event.json)\n\n"))
                case .heartbeat:
                    try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                case .end:
                    break loop
                }
            }
            try await writer.finish(nil)
        }
    }
}
