import Control
import Emulator
import Foundation
import Hummingbird
import Profile
import Testing

/// The control API names characteristics by id: a HID keyboard's three Reports (one UUID) are each reached on
/// their own, and a UUID in a route is an unknown characteristic whose error names the ids that have it.
@Suite struct DuplicateUUIDControlTests {
    @Test func eachReportIsReachedByItsIDAndAUUIDIsNotAnID() async throws {
        let emulator = try makeEmulator("../Tests/Fixtures/hid/hid-keyboard")
        try await withAPI(emulator) { client in
            var (status, body) = try await client.call(.post, "/v1/characteristics/consumer_input/notify", json: #"{"hex": "e9 00"}"#)
            #expect(status == .ok)
            (status, body) = try await client.call(.put, "/v1/characteristics/leds_output/value", json: #"{"hex": "02"}"#)
            #expect(status == .ok)
            (status, body) = try await client.call(.post, "/v1/characteristics/2a4d/notify", json: #"{"hex": "01"}"#)
            #expect(status == .notFound)
            #expect(
                body["error"] as? String
                    == "unknown characteristic \"2a4d\" (3 characteristics have this UUID; name one by its id: \"keyboard_input\", \"consumer_input\", \"leds_output\")"
            )
            // The table lists the three Reports and the two Battery services apart, by id.
            (status, body) = try await client.call(.get, "/v1/status")
            let services = try #require(body["services"] as? [[String: Any]], "\(body.keys.sorted())")
            #expect(services.compactMap { $0["id"] as? String } == ["hid", "battery_left", "battery_right", "device_information"])
            let hid = try #require(services.first?["characteristics"] as? [[String: Any]])
            #expect(
                hid.filter { ($0["uuid"] as? String)?.hasPrefix("00002a4d") == true }.compactMap { $0["id"] as? String }
                    == ["keyboard_input", "consumer_input", "leds_output"])
            #expect(hid.first { $0["id"] as? String == "leds_output" }?["value"] as? String == "02")
            #expect(hid.first { $0["id"] as? String == "keyboard_input" }?["value"] as? String == "0000000000000000")
        }
        let notified = emulator.events.events.filter { $0.kind == .notify }
        #expect(notified.map(\.characteristic) == ["consumer_input"])
        #expect(notified.map(\.value) == [[0xE9, 0x00]])
    }
}
