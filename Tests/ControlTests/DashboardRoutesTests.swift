import Control
import ControlContract
import Emulator
import Foundation
import HTTPTypes
import Hummingbird
import Profile
import Testing

/// The dashboard's files, the variables endpoint, percent-encoded names and the status additions.
@Suite struct DashboardRoutesTests {
    @Test func dashboardIsServedWithoutTheTokenAndWithAStrictPolicy() async throws {
        let emulator = try makeEmulator()
        try await withAPI(emulator, token: "s3cret", host: "0.0.0.0") { client in
            for (path, type) in [
                ("/", "text/html"), ("/dashboard.js", "text/javascript"), ("/timeline.js", "text/javascript"),
                ("/dashboard.css", "text/css"),
            ] {
                try await client.execute(uri: path, method: .get) { response in
                    #expect(response.status == .ok, "\(path)")
                    #expect(response.headers[.contentType]?.hasPrefix(type) == true, "\(path)")
                    let policy = response.headers[.contentSecurityPolicy] ?? ""
                    #expect(
                        policy.contains("default-src 'none'") && policy.contains("script-src 'self'") && !policy.contains("unsafe"),
                        "\(path): \(policy)")
                    #expect(response.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
                }
            }
            // The data still needs the token; another method on the page is 405.
            let (status, _) = try await client.call(.get, "/v1/status")
            #expect(status == .unauthorized)
            let (post, body) = try await client.call(.post, "/", headers: [.authorization: "Bearer s3cret"])
            #expect(post == .methodNotAllowed)
            #expect(body["allowed"] as? [String] == ["GET", "OPTIONS"])
        }
    }

    @Test func variablesAndStateCanBeSet() async throws {
        let emulator = try makeEmulator()
        try await withAPI(emulator) { client in
            var (status, body) = try await client.call(.put, "/v1/variables/lockState", json: #"{"value": 0}"#)
            #expect(status == .ok)
            #expect(body["value"] as? String == "0")
            (status, body) = try await client.call(.put, "/v1/variables/lockState", json: #"{"value": true}"#)
            #expect(status == .conflict, "lockState is a number")
            (status, body) = try await client.call(.put, "/v1/variables/hardwareCode", json: #"{"value": "2P"}"#)
            #expect(status == .ok)
            (status, body) = try await client.call(.put, "/v1/variables/nope", json: #"{"value": 1}"#)
            #expect(status == .notFound)
            #expect((body["known"] as? [String])?.contains("lockState") == true)
            (status, _) = try await client.call(.put, "/v1/variables/lockState", json: #"{"value": 1.5}"#)
            #expect(status == .badRequest)
            (status, _) = try await client.call(.put, "/v1/variables/lockState", json: #"{"value": 1, "x": 2}"#)
            #expect(status == .badRequest)
        }
        let status = Status(await emulator.status())
        #expect(status.state["lockState"] == "0")
        #expect(status.variables["hardwareCode"] == "2P")
        #expect(status.values.contains { $0.name == "lockState" && $0.kind == .state && $0.type == .number })
        #expect(emulator.events.events.contains { $0.detail == "control: lockState = 0" })
    }

    @Test func percentEncodedNamesAreDecoded() async throws {
        let emulator = try makeEmulator()
        try await withAPI(emulator) { client in
            var (status, body) = try await client.call(.post, "/v1/centrals/00%3A00%3A00%3A00%3A00%3A00/disconnect")
            #expect(status == .notFound, "a well-formed address that is not connected: \(body)")
            (status, _) = try await client.call(.post, "/v1/centrals/00%3Ax/disconnect")
            #expect(status == .badRequest)
            (status, _) = try await client.call(.post, "/v1/centrals/%ZZ/disconnect")
            #expect(status == .badRequest)
            (status, body) = try await client.call(.post, "/v1/characteristics/t%78/notify", json: #"{"hex": "01"}"#)
            #expect(status == .ok)
            #expect(body["characteristic"] as? String == "tx")
        }
    }

    @Test func statusHasTheGattTableAndAdvertisingBytes() async throws {
        let emulator = try makeEmulator("leaf-reader")
        let status = Status(await emulator.status())
        let data = try #require(status.services.flatMap(\.characteristics).first { $0.id == "data" })
        #expect(data.flags == ["write-without-response", "notify"])
        #expect(data.handle == nil, "no handle before bluetoothd assigns one")
        let advertisement = try #require(status.advertising.data.first)
        #expect(advertisement.advertisingData.hex.hasPrefix("020106"))
        #expect(advertisement.advertisingData.length == advertisement.advertisingData.hex.count / 2)
        #expect(advertisement.advertisingData.fits)
        #expect(advertisement.scanResponse.structures.first?.type == 0x09)
        #expect(status.triggerDescriptions["touch"]?.isEmpty == false)
        // The touch trigger switches to the variant whose service UUID the advertisement then carries. The touch
        // lasts a minute here, so a slow machine does not see its end timer fire before the checks below.
        #expect(try await emulator.setVariable("touchDuration", to: .integer(60_000)) == "60000")
        try await emulator.fireTrigger("touch", arguments: [:])
        let touched = Status(await emulator.status())
        #expect(touched.advertising.variant == "touched")
        #expect(touched.advertising.data.first?.serviceUUIDs != advertisement.serviceUUIDs)
        // With nobody connected, the rule the trigger fired names no central (no made-up lane in the timeline).
        let rule = try #require(emulator.events.events.last { $0.kind == .rule })
        #expect(rule.detail == "touch", "the touch rule, and its end timer has not fired")
        #expect(rule.central == nil)
    }

    @Test func faultsFromTheProfileAreOfferedAsPresets() async throws {
        let emulator = try makeEmulator()
        _ = try await emulator.addFault(FaultSpecDecoder.spec(JSONParser.parse(#"{"on": "write", "drop": true}"#, file: "x")))
        let status = Status(await emulator.status())
        #expect(status.faultPresets.isEmpty, "noke-lock declares no faults")
        #expect(status.faults.count == 1)
    }
}
