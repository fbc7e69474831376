import Bluetooth
import Foundation
import Testing

@testable import Emulator

@Suite struct EventLogTests {
    @Test func jsonLinesAreValidJSONWithEveryField() throws {
        let event = EmulatorEvent(
            sequence: 7, time: 1234.5678, kind: .write, central: BluetoothAddress("00:AA:01:02:00:02"), characteristic: "rx",
            value: [0x00, 0x51, 0xFF], detail: "quote \" backslash \\ newline \n tab \t bell \u{07} é")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(event.json.utf8)) as? [String: Any])
        #expect(object["seq"] as? Int == 7)
        #expect(object["t"] as? Double == 1234.568)
        #expect(object["event"] as? String == "write")
        #expect(object["central"] as? String == "00:AA:01:02:00:02")
        #expect(object["characteristic"] as? String == "rx")
        #expect(object["value"] as? String == "0051ff")
        #expect(object["detail"] as? String == "quote \" backslash \\ newline \n tab \t bell \u{07} é")
    }

    /// `t` is the time rounded to thousandths as Swift prints that Double, written without formatting a Double.
    @Test func jsonTimesArePrintedAsTheRoundedDouble() {
        var generator = SystemRandomNumberGenerator()
        var times: [Double] = [
            0, 0.0004, 0.0005, 0.001, 0.01, 0.1, 1, 1.5, 10.25, 99.9996, 1234.5678, 123456.07, 1e9 + 0.001, 86_400_000 * 365,
        ]
        for _ in 0..<2000 {
            times.append(Double.random(in: 0..<1e4, using: &generator))
            times.append(Double.random(in: 0..<1e10, using: &generator))
            times.append(Double(Int.random(in: 0..<10_000_000, using: &generator)) / 1000)
        }
        for time in times + times.map(-) + [1e300, -1e300] {
            var line: [UInt8] = []
            EmulatorEvent.appendJSONMilliseconds(time, to: &line)
            #expect(String(decoding: line, as: UTF8.self) == "\((time * 1000).rounded() / 1000)", "\(time)")
        }
    }

    @Test func textLinesAreAligned() {
        let event = EmulatorEvent(
            time: 5.0004, kind: .notify, central: BluetoothAddress("00:AA:01:02:00:02"), characteristic: "tx", value: [0x51, 0x60])
        #expect(event.text == "     5.000 ms notify       00:AA:01:02:00:02 tx 5160")
        #expect(EmulatorEvent(time: 12345678.9, kind: .advertisementChanged).text.hasPrefix("12345678.900 ms advertisement-changed"))
        #expect(EmulatorEvent(time: 0, kind: .read, value: []).text.hasSuffix("(empty)"))
        #expect(EmulatorEvent(time: 0, kind: .read).text == "     0.000 ms read        ")
        #expect(EmulatorEvent(time: 0.0456, kind: .mtu, detail: "517").text == "     0.046 ms mtu          517")
        let read = EmulatorEvent(
            sequence: 3, time: 1, kind: .read, central: BluetoothAddress("AA:BB:CC:DD:EE:01"), characteristic: "rx", mtu: 185)
        #expect(read.json == #"{"central":"AA:BB:CC:DD:EE:01","characteristic":"rx","event":"read","mtu":185,"seq":3,"t":1.0}"#)
        #expect(!read.text.contains("185"), "text lines leave the MTU to the mtu events")
        #expect(EmulatorEvent(time: 99.9996, kind: .write).text.hasPrefix("   100.000 ms write"))
        #expect(EmulatorEvent(time: 123456.07, kind: .write).text.hasPrefix("123456.070 ms write"))
    }

    @Test func recentEventsAreKeptInOrderUpToTheCapacity() throws {
        let log = try EventLog(format: .json)
        for index in 0..<(log.capacity + 5) {
            log.record(.note, detail: "\(index)")
        }
        let kept = log.events
        #expect(kept.count == log.capacity)
        #expect(kept.first?.sequence == 6)
        #expect(kept.last?.sequence == log.capacity + 5)
        #expect(
            log.events(since: log.capacity + 2).map(\.sequence) == [
                log.capacity + 3, log.capacity + 4, log.capacity + 5,
            ])
        #expect(log.events(since: 0, limit: 2).map(\.sequence) == [6, 7])
        #expect(log.events(since: log.capacity + 5).isEmpty)
    }
}

@Suite struct EventLogMemoryTests {
    /// `--event-memory`: a smaller log keeps only that many of the newest events; out-of-range sizes are clamped.
    @Test func aSmallerMemoryKeepsOnlyTheNewestEvents() throws {
        let log = try EventLog(format: .json, console: open("/dev/null", O_WRONLY), capacity: 250)
        for index in 0..<300 { log.record(.note, detail: "\(index)") }
        #expect(log.events.count == 250)
        #expect(log.events.first?.sequence == 51)
        #expect(log.events(since: 0).count == 250)
        let quiet = open("/dev/null", O_WRONLY)
        #expect(try EventLog(format: .json, console: quiet, capacity: 5).capacity == EventLog.capacityRange.lowerBound)
        #expect(try EventLog(format: .json, console: quiet, capacity: .max).capacity == EventLog.capacityRange.upperBound)
    }
}

@Suite struct EventLogSubscriptionTests {
    /// A client that asks for the stream while gattemu shuts down (after the live streams were ended)
    /// gets the kept events and an end, not a stream that waits for events that will never come.
    @Test(.timeLimit(.minutes(5))) func subscribingAfterTheEndDeliversTheKeptEventsAndEnds() async throws {
        let log = try EventLog(format: .json)
        log.record(.note, detail: "a")
        log.record(.stopped)
        log.finishSubscriptions()
        var seen: [Int] = []
        for await event in log.subscribe(since: 0) { seen.append(event.sequence) }
        #expect(seen == [1, 2])
        var unseen = 0
        for await _ in log.subscribe() { unseen += 1 }
        #expect(unseen == 0)
    }

    @Test(.timeLimit(.minutes(5))) func subscribingAfterCloseEnds() async throws {
        let log = try EventLog(format: .json)
        log.record(.stopped)
        log.close()
        var seen: [Int] = []
        for await event in log.subscribe(since: 0) { seen.append(event.sequence) }
        #expect(seen == [1])
    }
}

/// The log's outputs cannot stall gattemu: a reader that stops reading loses console lines (counted), never
/// the events file and never the recording thread (the D-Bus thread); the events file is opened safely.
@Suite struct EventLogOutputTests {
    @Test(.timeLimit(.minutes(5))) func aStalledConsoleNeverBlocksRecordingOrClosing() async throws {
        // Off the concurrency pool: closing waits out the stalled console's grace period.
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            DispatchQueue.global().async { continuation.resume(with: Result { try Self.stalledConsole() }) }
        }
    }

    static func stalledConsole() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer {
            close(ends[0])
            close(ends[1])
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gattemu-log-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("events.jsonl").path
        let log = try EventLog(format: .text, file: file, console: ends[1])
        // About 6 MB of text into a 64 KiB pipe nobody reads.
        let detail = String(repeating: "x", count: 300)
        for index in 0..<20_000 { log.record(.note, detail: "\(index) \(detail)") }
        log.close()
        // The events file has every event.
        let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 20_000)
        #expect(lines.last?.contains("\"seq\":20000") == true)
        // The console got what fitted, from the first line on.
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(ends[0], &buffer, buffer.count)
        #expect(count > 0)
        #expect(String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self).contains("note         0 xxx"))
        #expect(log.droppedConsoleLines > 0)
    }

    @Test func theEventsFileIsNotFollowedThroughSymlinksNorAFIFO() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gattemu-log-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("precious").path
        try "keep me\n".write(toFile: target, atomically: true, encoding: .utf8)
        let link = directory.appendingPathComponent("events.jsonl").path
        #expect(symlink(target, link) == 0)
        #expect(throws: EventLogFileError.self) { try EventLog(format: .json, file: link) }
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "keep me\n")
        let fifo = directory.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let error = #expect(throws: EventLogFileError.self) { try EventLog(format: .json, file: fifo) }
        #expect(error?.reason.contains("not a regular file") == true)
        // A new file, and an existing one (truncated), end up readable by the owner only.
        let fresh = directory.appendingPathComponent("fresh.jsonl").path
        try EventLog(format: .json, file: fresh).close()
        try "old contents\n".write(toFile: target, atomically: true, encoding: .utf8)
        #expect(chmod(target, 0o644) == 0)
        let log = try EventLog(format: .json, file: target)
        log.record(.note)
        log.close()
        for path in [fresh, target] {
            var info = stat()
            #expect(stat(path, &info) == 0)
            #expect(info.st_mode & 0o777 == 0o600, "\(path)")
        }
        #expect(try String(contentsOfFile: target, encoding: .utf8).hasPrefix("{") == true)
    }

    @Test func controlCharactersAreEscapedInTextLines() {
        let event = EmulatorEvent(
            time: 0, kind: .note, central: .zero, characteristic: "x\u{1B}[2J", detail: "rule \u{1B}]0;owned\u{07} \u{9B}31m done\r\n")
        let text = event.text
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
        #expect(text.contains("x\\u{1B}[2J"))
        #expect(text.contains("rule \\u{1B}]0;owned\\u{7} \\u{9B}31m done\\r\\n"))
    }
}
