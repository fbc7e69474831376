import Emulator
import Foundation
import Testing

@Suite struct EventLogTests {
    @Test func jsonLinesAreValidJSONWithEveryField() throws {
        let event = EmulatorEvent(sequence: 7, time: 1234.5678, kind: .write, central: "00:AA:01:02:00:02", characteristic: "rx",
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

    @Test func textLinesAreAligned() {
        let event = EmulatorEvent(time: 5.0004, kind: .notify, central: "AA", characteristic: "tx", value: [0x51, 0x60])
        #expect(event.text == "     5.000 ms notify       AA tx 5160")
        #expect(EmulatorEvent(time: 12345678.9, kind: .advertisementChanged).text.hasPrefix("12345678.900 ms advertisement-changed"))
        #expect(EmulatorEvent(time: 0, kind: .read, value: []).text.hasSuffix("(empty)"))
        #expect(EmulatorEvent(time: 0, kind: .read).text == "     0.000 ms read        ")
        #expect(EmulatorEvent(time: 0.0456, kind: .mtu, detail: "517").text == "     0.046 ms mtu          517")
        #expect(EmulatorEvent(time: 99.9996, kind: .write).text.hasPrefix("   100.000 ms write"))
        #expect(EmulatorEvent(time: 123456.07, kind: .write).text.hasPrefix("123456.070 ms write"))
    }

    @Test func recentEventsAreKeptInOrderUpToTheCapacity() throws {
        let log = try EventLog(format: .json)
        for index in 0..<(EventLog.capacity + 5) {
            log.record(.note, detail: "\(index)")
        }
        let kept = log.events
        #expect(kept.count == EventLog.capacity)
        #expect(kept.first?.sequence == 6)
        #expect(kept.last?.sequence == EventLog.capacity + 5)
        #expect(log.events(since: EventLog.capacity + 2).map(\.sequence) == [EventLog.capacity + 3, EventLog.capacity + 4, EventLog.capacity + 5])
        #expect(log.events(since: 0, limit: 2).map(\.sequence) == [6, 7])
        #expect(log.events(since: EventLog.capacity + 5).isEmpty)
    }
}

@Suite struct EventLogSubscriptionTests {
    /// A client that asks for the stream while gattemu shuts down (after the live streams were ended)
    /// gets the kept events and an end, not a stream that waits for events that will never come.
    @Test(.timeLimit(.minutes(1))) func subscribingAfterTheEndDeliversTheKeptEventsAndEnds() async throws {
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

    @Test(.timeLimit(.minutes(1))) func subscribingAfterCloseEnds() async throws {
        let log = try EventLog(format: .json)
        log.record(.stopped)
        log.close()
        var seen: [Int] = []
        for await event in log.subscribe(since: 0) { seen.append(event.sequence) }
        #expect(seen == [1])
    }
}
