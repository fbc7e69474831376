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
    private let recent = Mutex<[EmulatorEvent]>([])

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
        let line = (format == .json ? event.json : event.text) + "\n"
        FileHandle.standardOutput.write(Data(line.utf8))
        file.withLock { handle in
            handle?.write(Data((event.json + "\n").utf8))
        }
        recent.withLock { events in
            events.append(event)
            if events.count > 10_000 { events.removeFirst(events.count - 10_000) }
        }
    }

    /// The most recent events (up to 10,000), oldest first.
    public var events: [EmulatorEvent] { recent.withLock { $0 } }

    /// Flushes and closes the file.
    public func close() {
        file.withLock { handle in
            try? handle?.synchronize()
            try? handle?.close()
            handle = nil
        }
    }
}
