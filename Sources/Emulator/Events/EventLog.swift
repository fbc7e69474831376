import BlueZ
import Bluetooth
import DequeModule
import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where events go: the console (text or JSON lines) and optionally a JSON-lines file.
///
/// Recording never waits for output: lines are appended to a batch under a lock and written by a writer of
/// their own — at once on a terminal, otherwise at most ``flushInterval`` later or when a batch grows past
/// ``flushThreshold`` (one `write(2)` per batch). A console nobody reads (a stalled pipe) loses lines beyond
/// ``consoleBacklog`` bytes, counted and reported once it moves again; the events file keeps everything up to
/// ``fileBacklog`` bytes waiting. ``close()`` writes what is left, giving a stalled console ``closeGrace``.
public final class EventLog: Sendable {
    public enum Format: String, Sendable { case text, json }

    private let format: Format
    private let start = ContinuousClock.now
    private let recent = Mutex<Recent>(Recent())
    private let lineBuffered: Bool
    private let console: Int32
    /// False for a regular file: writes to it never stall, so they need no waiting for readiness.
    private let consoleMayStall: Bool
    private let writer = DispatchQueue(label: "gattemu.event-log")

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
        /// A write of the batch is queued on the writer (now, or after the flush interval).
        var writeQueued = false
        var droppedConsoleLines = 0
        /// Console lines dropped since the last report of it.
        var unreportedConsoleDrops = 0
        var droppedFileLines = 0
        /// When ``close()`` began; a console that has not taken output within ``closeGrace`` after it is given up.
        var closingSince: ContinuousClock.Instant?
    }

    /// How many recent events are kept for `events(since:)` and each stream's backlog (`--event-memory`).
    public let capacity: Int
    /// ``capacity`` unless `--event-memory` says otherwise.
    public static let defaultCapacity = 10_000
    /// What `--event-memory` may be.
    public static let capacityRange = 100...100_000
    /// The longest an event waits in the batch before it is written.
    public static let flushInterval: DispatchTimeInterval = .milliseconds(50)
    /// A batch this large (bytes) is written at once.
    static let flushThreshold = 16 * 1024
    /// Console output waiting beyond this (bytes) is dropped, not kept: its reader has stopped reading.
    public static let consoleBacklog = 1 << 20
    /// Events-file output waiting beyond this (bytes) is dropped (a file system that stopped taking writes).
    public static let fileBacklog = 64 << 20
    /// How long ``close()`` keeps trying to write to a console that does not take output.
    public static let closeGrace: Duration = .seconds(2)

    /// `file` is created (or truncated) readable by its owner only; a symbolic link, a FIFO or any other
    /// non-regular file there is refused. `console` is where lines go (standard output). `capacity` is clamped to
    /// ``capacityRange``.
    public init(
        format: Format, file path: String? = nil, console: Int32 = STDOUT_FILENO, capacity: Int = EventLog.defaultCapacity
    ) throws {
        self.format = format
        self.capacity = min(max(capacity, Self.capacityRange.lowerBound), Self.capacityRange.upperBound)
        self.console = console
        lineBuffered = isatty(console) != 0
        var info = stat()
        consoleMayStall = !(fstat(console, &info) == 0 && info.st_mode & S_IFMT == S_IFREG)
        if let path {
            let descriptor = try Self.openEventsFile(path)
            recent.withLock { $0.fileDescriptor = descriptor }
        }
    }

    /// Opens `path` for the events: never through a symbolic link, never anything but a regular file
    /// (opening a FIFO does not wait for a reader), mode 0600, emptied.
    static func openEventsFile(_ path: String) throws -> Int32 {
        func failure(_ reason: String) -> EventLogFileError { EventLogFileError(path: path, reason: reason) }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0o600)
        guard descriptor >= 0 else {
            let code = errno
            switch code {
            case ELOOP: throw failure("it is a symbolic link (refused)")
            case ENXIO: throw failure("not a regular file (refused)")  // a FIFO nobody reads
            default: throw failure(String(cString: strerror(code)).lowercased())
            }
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            Glibc.close(descriptor)
            throw failure("not a regular file (refused)")
        }
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags & ~O_NONBLOCK) == 0, ftruncate(descriptor, 0) == 0,
            fchmod(descriptor, 0o600) == 0
        else {
            let code = errno
            Glibc.close(descriptor)
            throw failure(String(cString: strerror(code)).lowercased())
        }
        return descriptor
    }

    /// Milliseconds since the log was created.
    public var now: Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    }

    /// Records an event of `central`, named in the log by its address (nil: of no central).
    public func record(
        _ kind: EmulatorEvent.Kind, central: BluetoothAddress? = nil, characteristic: CharacteristicID? = nil, descriptor: String? = nil,
        value: [UInt8]? = nil, detail: String? = nil, mtu: Int? = nil, progress: EmulatorEvent.Progress? = nil
    ) {
        let characteristic = characteristic.map { GattAttributeID(characteristic: $0, descriptor: descriptor).description }
        record(
            EmulatorEvent(
                time: now, kind: kind, central: central, characteristic: characteristic, value: value, detail: detail, mtu: mtu,
                progress: progress))
    }

    public func record(_ event: EmulatorEvent) {
        // The sequence number, the batches and the subscribers are all handled under the lock so that every
        // output sees events in sequence order.
        let write = recent.withLock { recent -> Write? in
            var event = event
            event.sequence = recent.nextSequence
            recent.nextSequence += 1
            // A line for both outputs is formatted once; for one, straight into its batch.
            var shared: [UInt8]?
            if format == .json, recent.fileDescriptor >= 0 {
                var line: [UInt8] = []
                event.appendJSON(to: &line)
                shared = line
            }
            if recent.console.count < Self.consoleBacklog {
                if let shared {
                    recent.console += shared
                } else if format == .json {
                    event.appendJSON(to: &recent.console)
                } else {
                    event.appendText(to: &recent.console)
                }
                recent.console.append(UInt8(ascii: "\n"))
            } else {
                recent.droppedConsoleLines += 1
                recent.unreportedConsoleDrops += 1
            }
            if recent.fileDescriptor >= 0 {
                if recent.file.count < Self.fileBacklog {
                    if let shared { recent.file += shared } else { event.appendJSON(to: &recent.file) }
                    recent.file.append(UInt8(ascii: "\n"))
                } else {
                    recent.droppedFileLines += 1
                }
            }
            recent.events.append(event)
            if recent.events.count > capacity { recent.events.removeFirst() }
            for subscriber in recent.subscribers.values { subscriber.yield(event) }
            guard !recent.writeQueued else { return nil }
            recent.writeQueued = true
            return lineBuffered || recent.console.count + recent.file.count >= Self.flushThreshold ? .now : .later
        }
        switch write {
        case .now?: writer.async { [self] in writeBatch() }
        case .later?: writer.asyncAfter(deadline: .now() + Self.flushInterval) { [self] in writeBatch() }
        case nil: break
        }
    }

    private enum Write { case now, later }

    /// Console lines dropped so far because nobody read the console.
    public var droppedConsoleLines: Int { recent.withLock { $0.droppedConsoleLines } }

    /// Writes every batched line now (waits for the writer).
    public func flush() {
        writer.sync { writeBatch() }
    }

    /// Takes the batches and writes them, outside the lock; on the writer's queue only.
    private func writeBatch() {
        let (console, file, descriptor, drops) = recent.withLock { recent in
            defer {
                recent.console = []
                recent.file = []
                recent.unreportedConsoleDrops = 0
                recent.writeQueued = false
            }
            return (recent.console, recent.file, recent.fileDescriptor, recent.unreportedConsoleDrops)
        }
        var output = console
        if drops > 0 {
            output += "[gattemu: \(drops) log lines not shown: standard output was not being read]\n".utf8
        }
        let unwritten = DescriptorOutput.writeAll(
            &output, to: self.console,
            giveUp: consoleMayStall
                ? { [self] in
                    recent.withLock { $0.closingSince }.map { .now - $0 >= Self.closeGrace } ?? false
                } : nil)
        if unwritten > 0 {
            let lines = console.suffix(unwritten).reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
            recent.withLock { $0.droppedConsoleLines += max(lines, 1) }
        }
        var fileBytes = file
        if descriptor >= 0 { _ = DescriptorOutput.writeAll(&fileBytes, to: descriptor) }
    }

    /// Writes what is batched, closes the file and ends every subscription. A console that does not take
    /// output within ``closeGrace`` loses the rest.
    public func close() {
        let subscribers = recent.withLock { recent in
            recent.closingSince = .now
            return Self.endSubscriptions(&recent)
        }
        for subscriber in subscribers { subscriber.finish() }
        writer.sync {
            writeBatch()
            recent.withLock { recent in
                if recent.fileDescriptor >= 0 {
                    if recent.droppedFileLines > 0 {
                        var note = Array(
                            "{\"event\":\"note\",\"detail\":\"\(recent.droppedFileLines) events not written: the file did not take them\"}\n"
                                .utf8)
                        _ = DescriptorOutput.writeAll(&note, to: recent.fileDescriptor)
                    }
                    fsync(recent.fileDescriptor)
                    Glibc.close(recent.fileDescriptor)
                    recent.fileDescriptor = -1
                }
            }
        }
    }

    /// The most recent events (up to ``capacity``), oldest first.
    public var events: [EmulatorEvent] { recent.withLock { Array($0.events) } }

    /// Kept events with a sequence number above `sequence`, oldest first, at most `limit`.
    public func events(since sequence: Int, limit: Int? = nil) -> [EmulatorEvent] {
        let limit = limit ?? capacity
        return recent.withLock { recent in
            // Sequence numbers are consecutive, so the first wanted event's index is known.
            guard let first = recent.events.first?.sequence else { return [] }
            // Clamped before adding: `sequence` comes from a query (up to Int.max).
            let start = min(max(0, min(sequence, Int.max - 1) + 1 - first), recent.events.count)
            return Array(recent.events[start...].prefix(max(0, limit)))
        }
    }

    /// The sequence number of the latest event (0 when none).
    public var lastSequence: Int { recent.withLock { $0.nextSequence - 1 } }

    /// Kept events after `sequence`, then every new event as it is recorded, until the stream's consumer stops
    /// or the subscriptions end (a stream asked for after that has the kept events only).
    public func subscribe(since sequence: Int? = nil) -> AsyncStream<EmulatorEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: EmulatorEvent.self, bufferingPolicy: .bufferingNewest(capacity))
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
}

/// The events file could not be opened for writing.
public struct EventLogFileError: Error, Sendable, CustomStringConvertible {
    public var path: String
    /// Why, as the system says it ("permission denied").
    public var reason: String

    public var description: String { "cannot write events to \(path): \(reason)" }
}
