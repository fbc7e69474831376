import DequeModule
import Foundation
import Synchronization

/// Where events go: the console (text or JSON lines) and optionally a JSON-lines file.
///
/// Every write is flushed at once, so nothing is lost when the process is killed after an event.
public final class EventLog: Sendable {
    public enum Format: String, Sendable { case text, json }

    private let format: Format
    private let file: Mutex<FileHandle?>
    private let start = ContinuousClock.now
    private let recent = Mutex<Recent>(Recent())

    /// The kept events, the next sequence number and the live subscribers, under one lock so that
    /// sequence numbers, the buffer and the streams always agree.
    private struct Recent {
        var events = Deque<EmulatorEvent>()
        var nextSequence = 1
        var subscribers: [Int: AsyncStream<EmulatorEvent>.Continuation] = [:]
        var nextSubscriber = 0
    }

    /// How many recent events are kept for `events(since:)`.
    public static let capacity = 10_000

    public init(format: Format, file path: String? = nil) throws {
        self.format = format
        if let path {
            FileManager.default.createFile(atPath: path, contents: nil)
            guard let handle = FileHandle(forWritingAtPath: path) else {
                throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path])
            }
            file = Mutex(handle)
        } else {
            file = Mutex(nil)
        }
    }

    /// Milliseconds since the log was created.
    public var now: Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    }

    public func record(_ kind: EmulatorEvent.Kind, central: String? = nil, characteristic: String? = nil, value: [UInt8]? = nil, detail: String? = nil) {
        record(EmulatorEvent(time: now, kind: kind, central: central, characteristic: characteristic, value: value, detail: detail))
    }

    public func record(_ event: EmulatorEvent) {
        // The sequence number, console, file and subscribers are all handled under the lock so that
        // every output sees events in sequence order.
        recent.withLock { recent in
            var event = event
            event.sequence = recent.nextSequence
            recent.nextSequence += 1
            let line = (format == .json ? event.json : event.text) + "\n"
            FileHandle.standardOutput.write(Data(line.utf8))
            file.withLock { handle in
                handle?.write(Data((event.json + "\n").utf8))
            }
            recent.events.append(event)
            if recent.events.count > Self.capacity { recent.events.removeFirst() }
            for subscriber in recent.subscribers.values { subscriber.yield(event) }
        }
    }

    /// The most recent events (up to ``capacity``), oldest first.
    public var events: [EmulatorEvent] { recent.withLock { Array($0.events) } }

    /// Kept events with a sequence number above `sequence`, oldest first, at most `limit`.
    public func events(since sequence: Int, limit: Int = capacity) -> [EmulatorEvent] {
        recent.withLock { recent in
            // Sequence numbers are consecutive, so the first wanted event's index is known.
            guard let first = recent.events.first?.sequence else { return [] }
            let start = min(max(0, sequence + 1 - first), recent.events.count)
            return Array(recent.events[start...].prefix(max(0, limit)))
        }
    }

    /// The sequence number of the latest event (0 when none).
    public var lastSequence: Int { recent.withLock { $0.nextSequence - 1 } }

    /// Kept events after `sequence`, then every new event as it is recorded, until the stream's consumer stops.
    public func subscribe(since sequence: Int? = nil) -> AsyncStream<EmulatorEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: EmulatorEvent.self, bufferingPolicy: .bufferingNewest(Self.capacity))
        let id = recent.withLock { recent in
            if let sequence {
                for event in recent.events where event.sequence > sequence { continuation.yield(event) }
            }
            let id = recent.nextSubscriber
            recent.nextSubscriber += 1
            recent.subscribers[id] = continuation
            return id
        }
        continuation.onTermination = { [weak self] _ in
            self?.recent.withLock { _ = $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Ends every subscription: each stream delivers what it holds, then finishes.
    public func finishSubscriptions() {
        let subscribers = recent.withLock { recent in defer { recent.subscribers = [:] }; return recent.subscribers }
        for subscriber in subscribers.values { subscriber.finish() }
    }

    /// Flushes and closes the file and ends every subscription.
    public func close() {
        finishSubscriptions()
        file.withLock { handle in
            try? handle?.synchronize()
            try? handle?.close()
            handle = nil
        }
    }
}
