import DequeModule
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Where events go: the console (text or JSON lines) and optionally a JSON-lines file.
///
/// On a terminal every line is written at once. Otherwise (a pipe or a file) lines are batched and
/// written at most ``flushInterval`` after they were recorded, when a batch grows past
/// ``flushThreshold``, on ``flush()`` and on ``close()``: one `write(2)` per batch instead of one per event.
public final class EventLog: Sendable {
    public enum Format: String, Sendable { case text, json }

    private let format: Format
    private let start = ContinuousClock.now
    private let recent = Mutex<Recent>(Recent())
    private let lineBuffered: Bool

    /// The kept events, the next sequence number, the live subscribers and the unwritten output, under
    /// one lock so that sequence numbers, the buffer, the streams and the outputs always agree.
    private struct Recent {
        var events = Deque<EmulatorEvent>()
        var nextSequence = 1
        var subscribers: [Int: AsyncStream<EmulatorEvent>.Continuation] = [:]
        var nextSubscriber = 0
        /// Set by ``finishSubscriptions()`` and ``close()``: later subscriptions get the kept events and end.
        var subscriptionsEnded = false
        var console: [UInt8] = []
        var file: [UInt8] = []
        /// The events file's descriptor, -1 when there is none (or after ``close()``).
        var fileDescriptor: Int32 = -1
        var flushScheduled = false
    }

    /// How many recent events are kept for `events(since:)`.
    public static let capacity = 10_000
    /// The longest an event waits in the batch before it is written.
    public static let flushInterval: DispatchTimeInterval = .milliseconds(50)
    /// A batch this large (bytes) is written at once.
    static let flushThreshold = 16 * 1024

    public init(format: Format, file path: String? = nil) throws {
        self.format = format
        lineBuffered = isatty(STDOUT_FILENO) != 0
        if let path {
            let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else {
                throw EventLogFileError(path: path, reason: String(cString: strerror(errno)).lowercased())
            }
            recent.withLock { $0.fileDescriptor = descriptor }
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
        let scheduleFlush = recent.withLock { recent -> Bool in
            var event = event
            event.sequence = recent.nextSequence
            recent.nextSequence += 1
            let json = format == .json || recent.fileDescriptor >= 0 ? event.json : ""
            if format == .json { recent.console += json.utf8 } else { event.appendText(to: &recent.console) }
            recent.console.append(UInt8(ascii: "\n"))
            if recent.fileDescriptor >= 0 {
                recent.file.append(contentsOf: json.utf8)
                recent.file.append(UInt8(ascii: "\n"))
            }
            recent.events.append(event)
            if recent.events.count > Self.capacity { recent.events.removeFirst() }
            for subscriber in recent.subscribers.values { subscriber.yield(event) }
            if lineBuffered || recent.console.count + recent.file.count >= Self.flushThreshold {
                Self.writeOut(&recent)
                return false
            }
            defer { recent.flushScheduled = true }
            return !recent.flushScheduled
        }
        if scheduleFlush {
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.flushInterval) { [weak self] in self?.flush() }
        }
    }

    /// Writes every batched line now.
    public func flush() {
        recent.withLock { Self.writeOut(&$0) }
    }

    /// Writes the batches out (under the lock, so lines never interleave or reorder).
    private static func writeOut(_ recent: inout Recent) {
        recent.flushScheduled = false
        writeAll(STDOUT_FILENO, &recent.console)
        if recent.fileDescriptor >= 0 { writeAll(recent.fileDescriptor, &recent.file) }
    }

    private static func writeAll(_ descriptor: Int32, _ bytes: inout [UInt8]) {
        guard !bytes.isEmpty else { return }
        DescriptorOutput.writeAll(&bytes, to: descriptor)
        if bytes.capacity > 4 * flushThreshold { bytes = [] }
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

    /// Kept events after `sequence`, then every new event as it is recorded, until the stream's consumer stops
    /// or the subscriptions end (a stream asked for after that has the kept events only).
    public func subscribe(since sequence: Int? = nil) -> AsyncStream<EmulatorEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: EmulatorEvent.self, bufferingPolicy: .bufferingNewest(Self.capacity))
        let id = recent.withLock { recent -> Int? in
            if let sequence {
                for event in recent.events where event.sequence > sequence { continuation.yield(event) }
            }
            guard !recent.subscriptionsEnded else { return nil }
            let id = recent.nextSubscriber
            recent.nextSubscriber += 1
            recent.subscribers[id] = continuation
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            self?.recent.withLock { _ = $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Ends every subscription: each stream delivers what it holds, then finishes.
    public func finishSubscriptions() {
        let subscribers = recent.withLock { Self.endSubscriptions(&$0) }
        for subscriber in subscribers { subscriber.finish() }
    }

    /// Marks the subscriptions ended and hands out the live ones for finishing outside the lock.
    private static func endSubscriptions(_ recent: inout Recent) -> [AsyncStream<EmulatorEvent>.Continuation] {
        recent.subscriptionsEnded = true
        defer { recent.subscribers = [:] }
        return Array(recent.subscribers.values)
    }

    /// Writes what is batched, closes the file and ends every subscription.
    public func close() {
        let subscribers = recent.withLock { recent in
            Self.writeOut(&recent)
            if recent.fileDescriptor >= 0 {
                fsync(recent.fileDescriptor)
                Glibc.close(recent.fileDescriptor)
                recent.fileDescriptor = -1
            }
            return Self.endSubscriptions(&recent)
        }
        for subscriber in subscribers { subscriber.finish() }
    }
}

/// The events file could not be opened for writing.
public struct EventLogFileError: Error, Sendable, CustomStringConvertible {
    public var path: String
    /// Why, as the system says it ("permission denied").
    public var reason: String

    public var description: String { "cannot write events to \(path): \(reason)" }
}
