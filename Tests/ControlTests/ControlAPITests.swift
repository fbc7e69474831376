import Control
import Emulator
import Foundation
import Hummingbird
import Profile
import Testing

@Suite struct ControlAPITests {
    @Test func statusDescribesTheProfile() async throws {
        let emulator = try makeEmulator()
        try await withAPI(emulator) { client in
            let (status, body) = try await client.call(.get, "/v1/status")
            #expect(status == .ok)
            #expect((body["profile"] as? String)?.hasSuffix("noke-lock.json") == true)
            #expect(body["triggers"] as? [String] == ["jam", "unjam", "lock"])
            #expect((body["centrals"] as? [Any])?.isEmpty == true)
            #expect((body["advertising"] as? [String: Any])?["advertised"] as? Bool == false)
            #expect((body["state"] as? [String: String])?.isEmpty == false)
        }
    }

    @Test func notifyValidatesCharacteristicAndValue() async throws {
        let emulator = try makeEmulator()
        try await withAPI(emulator) { client in
            var (status, body) = try await client.call(.post, "/v1/characteristics/nope/notify", json: #"{"hex": "01"}"#)
            #expect(status == .notFound)
            #expect(body["error"] as? String == "unknown characteristic \"nope\"")
            #expect(body["known"] as? [String] == ["rx", "tx", "session"])

            (status, body) = try await client.call(.post, "/v1/characteristics/tx/notify", json: #"{"hex": "5g"}"#)
            #expect(status == .badRequest)
            #expect((body["error"] as? String)?.contains("bad hex") == true)

            (status, body) = try await client.call(.post, "/v1/characteristics/tx/notify", json: #"{"hex": "51 60"#)
            #expect(status == .badRequest)
            #expect((body["error"] as? String)?.hasPrefix("malformed JSON") == true)

            (status, body) = try await client.call(.post, "/v1/characteristics/tx/notify")
            #expect(status == .badRequest)

            (status, body) = try await client.call(.post, "/v1/characteristics/session/notify", json: #"{"hex": "01"}"#)
            #expect(status == .conflict, "session cannot notify")

            (status, body) = try await client.call(.post, "/v1/characteristics/tx/notify", json: #"{"utf8": "hi"}"#)
            #expect(status == .ok)
            #expect(body["hex"] as? String == "6869")
        }
        let notes = emulator.events.events.filter { $0.kind == .notify && $0.characteristic == "tx" }
        #expect(notes.map(\.value) == [[0x68, 0x69]])
    }

    @Test func setValueIsServedToReads() async throws {
        let emulator = try makeEmulator()
        try await withAPI(emulator) { client in
            let (status, _) = try await client.call(.put, "/v1/characteristics/session/value", json: #"{"base64": "AQID"}"#)
            #expect(status == .ok)
        }
        let bytes = try await emulator.read(gattRead("session"))
        #expect(bytes == [1, 2, 3])
    }

    @Test func triggersFireRulesAndUnknownOnesAre404() async throws {
        let emulator = try makeEmulator()
        try await withAPI(emulator) { client in
            var (status, body) = try await client.call(.post, "/v1/triggers/explode")
            #expect(status == .notFound)
            #expect(body["known"] as? [String] == ["jam", "unjam", "lock"])
            (status, body) = try await client.call(.post, "/v1/triggers/jam", json: #"{"arguments": {"why": "test", "n": 2}}"#)
            #expect(status == .ok)
            (status, body) = try await client.call(.post, "/v1/triggers/jam", json: #"{"arguments": [1]}"#)
            #expect(status == .badRequest)
        }
        #expect(emulator.events.events.contains { $0.kind == .rule })
    }

    @Test func faultsCanBeAddedListedAndRemoved() async throws {
        let emulator = try makeEmulator()
        try await withAPI(emulator) { client in
            var (status, body) = try await client.call(
                .post, "/v1/faults", json: #"{"on": "write", "characteristic": "rx", "error": "not-authorized", "count": 1}"#)
            #expect(status == .created)
            #expect(body["id"] as? String == "f1")
            #expect(body["summary"] as? String == "error not-authorized")

            (status, body) = try await client.call(
                .post, "/v1/faults", json: #"[{"id": "slow", "on": "read", "delay": 5}, {"on": "notify", "drop": true}]"#)
            #expect(status == .created)
            #expect((body["faults"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["slow", "f2"])

            (status, body) = try await client.call(.get, "/v1/faults")
            #expect((body["faults"] as? [[String: Any]])?.count == 3)

            (status, body) = try await client.call(.delete, "/v1/faults/slow")
            #expect(status == .ok)
            (status, body) = try await client.call(.delete, "/v1/faults/slow")
            #expect(status == .notFound)
            #expect(body["known"] as? [String] == ["f1", "f2"])

            (status, body) = try await client.call(.delete, "/v1/faults")
            #expect(body["removed"] as? Int == 2)
        }
    }

    @Test func badFaultSpecsAre400WithTheReason() async throws {
        let emulator = try makeEmulator()
        try await withAPI(emulator) { client in
            // Well-formed, but naming what the profile does not have (404) or cannot do (409).
            let profileCases: [(String, HTTPResponse.Status, String)] = [
                (#"{"on": "write", "characteristic": "nope", "drop": true}"#, .notFound, "unknown characteristic \"nope\""),
                (#"{"on": "write", "characteristic": "session", "drop": true}"#, .conflict, "no write"),
                (#"{"advertise": "touched"}"#, .notFound, "unknown advertisement variant"),
                (#"[{"id": "a", "on": "read", "drop": true}, {"id": "a", "on": "read", "drop": true}]"#, .conflict, "already exists"),
            ]
            for (json, expectedStatus, expected) in profileCases {
                let (status, body) = try await client.call(.post, "/v1/faults", json: json)
                #expect(status == expectedStatus, "\(json)")
                #expect((body["error"] as? String)?.contains(expected) == true, "\(json): \(body["error"] ?? "")")
            }
            let cases: [(String, String)] = [
                (#"{"on": "write", "error": "bogus"}"#, "expected an ATT error"),
                (#"{"on": "write", "error": "NOT-AUTHORIZED"}"#, "expected an ATT error"),
                (#"{"on": "write", "error": "0x+80"}"#, "expected an ATT error"),
                (#"{"on": "write"}"#, "needs one action"),
                (#"{"on": "notify", "corrupt": {"flipBits": 1, "hex": "ff"}}"#, "found keys"),
                (#"{"on": "notify", "corrupt": {"at": "x", "hex": "ff"}}"#, "at:"),
                (#"{"on": "notify", "corrupt": {"hex": "+f"}}"#, "hex"),
                (#"{"on": "write", "delay": "1e3"}"#, "duration"),
                (#"{"on": "write", "delay": {"min": 1, "max": 2, "x": 3}}"#, "min"),
                (#"{"faults": [], "extra": 1}"#, "only \"faults\""),
                (#"{"on": "write", "drop": true, "$comment": 5}"#, "expected a string"),
                (#"{"on": "write", "drop": true, "nth": -1}"#, "nth"),
                (#"[{"on": "read", "drop": true}, {"on": "read"}]"#, "faults[1]"),
                (#""drop""#, "expected an array"),
                ("{", "malformed JSON"),
            ]
            for (json, expected) in cases {
                let (status, body) = try await client.call(.post, "/v1/faults", json: json)
                #expect(status == .badRequest, "\(json)")
                #expect((body["error"] as? String)?.contains(expected) == true, "\(json): \(body["error"] ?? "")")
            }
            // All or nothing: the first of the refused pair was not kept.
            let (_, list) = try await client.call(.get, "/v1/faults")
            #expect((list["faults"] as? [Any])?.isEmpty == true)
        }
    }

    @Test func eventsSinceAndBadQueries() async throws {
        let emulator = try makeEmulator()
        emulator.events.record(.note, detail: "one")
        emulator.events.record(.note, detail: "two")
        let first = emulator.events.lastSequence
        emulator.events.record(.note, detail: "three")
        try await withAPI(emulator) { client in
            var (status, body) = try await client.call(.get, "/v1/events?since=\(first)")
            #expect(status == .ok)
            let events = body["events"] as? [[String: Any]] ?? []
            #expect(events.map { $0["detail"] as? String } == ["three"])
            #expect(events.first?["seq"] as? Int == first + 1)
            #expect(body["last"] as? Int == first + 1)

            (status, body) = try await client.call(.get, "/v1/events?since=0&limit=1")
            #expect((body["events"] as? [[String: Any]])?.first?["seq"] as? Int == 1)

            (status, body) = try await client.call(.get, "/v1/events?since=abc")
            #expect(status == .badRequest)
        }
    }

    /// `ctl events --follow` connecting while gattemu shuts down gets what was logged and a complete answer.
    @Test(.timeLimit(.minutes(5))) func eventStreamAskedForDuringShutdownEnds() async throws {
        let emulator = try makeEmulator()
        emulator.events.record(.note, detail: "one")
        emulator.events.record(.stopped)
        emulator.events.finishSubscriptions()
        try await withAPI(emulator) { client in
            try await client.execute(uri: "/v1/events/stream?since=0", method: .get) { response in
                #expect(response.status == .ok)
                let text = String(buffer: response.body)
                #expect(text.components(separatedBy: "\n").filter { $0.hasPrefix("id: ") } == ["id: 1", "id: 2"])
                #expect(text.contains("event: stopped"))
            }
        }
    }

    @Test func advertisementVariantsAndReset() async throws {
        let emulator = try makeEmulator("leaf-reader")
        try await withAPI(emulator) { client in
            var (status, body) = try await client.call(.put, "/v1/advertisement", json: #"{"variant": "missing"}"#)
            #expect(status == .notFound)
            #expect(body["known"] as? [String] == ["touched"])
            (status, body) = try await client.call(.put, "/v1/advertisement", json: #"{"variant": "touched"}"#)
            #expect(status == .ok)
            (status, body) = try await client.call(.get, "/v1/status")
            #expect((body["advertising"] as? [String: Any])?["variant"] as? String == "touched")
            (status, body) = try await client.call(.put, "/v1/advertisement", json: #"{}"#)
            #expect(status == .badRequest)
            (status, body) = try await client.call(.post, "/v1/reset")
            #expect(status == .ok)
            (status, body) = try await client.call(.get, "/v1/status")
            #expect((body["advertising"] as? [String: Any])?["variant"] == nil)
        }
    }

    @Test func disconnectingAnUnknownCentral() async throws {
        let emulator = try makeEmulator()
        try await withAPI(emulator) { client in
            var (status, _) = try await client.call(.post, "/v1/centrals/AA:BB:CC:DD:EE:FF/disconnect")
            #expect(status == .notFound)
            (status, _) = try await client.call(.post, "/v1/centrals/nonsense/disconnect")
            #expect(status == .badRequest)
        }
    }

    /// Pairing and bonds on an emulator that never reached bluetoothd: the status says how it would pair,
    /// answers with no prompt waiting are conflicts, there are no bonds (no adapter), bad bodies and addresses are 400.
    @Test func pairingAndBondsWithoutBluetoothd() async throws {
        let emulator = try makeEmulator()
        try await withAPI(emulator) { client in
            var (status, body) = try await client.call(.get, "/v1/pairing")
            #expect(status == .ok && body["agent"] as? Bool == false && body["io"] == nil, "\(body)")
            (status, body) = try await client.call(.post, "/v1/pairing", json: #"{"prompt": 1, "accept": true}"#)
            #expect(status == .conflict, "\(body)")
            #expect((body["error"] as? String)?.contains("no pairing prompt") == true)
            // An answer names its prompt (the id in GET /v1/pairing): one that does not is refused.
            for bad in [
                #"{"prompt": 1, "passkey": "12345"}"#, #"{"prompt": 1, "passkey": 1000000}"#, #"{"prompt": 1, "accept": "yes"}"#,
                #"{"prompt": 1, "accept": true, "passkey": 1}"#, #"{}"#, "[1]", #"{"accept": true}"#, #"{"passkey": "123456"}"#,
                #"{"prompt": 0, "accept": true}"#, #"{"prompt": "1", "accept": true}"#, #"{"prompt": 1.5, "accept": true}"#,
                #"{"prompt": 1}"#,
            ] {
                (status, body) = try await client.call(.post, "/v1/pairing", json: bad)
                #expect(status == .badRequest, "\(bad): \(body)")
            }
            (status, body) = try await client.call(.get, "/v1/bonds")
            #expect(status == .ok && (body["bonds"] as? [Any])?.isEmpty == true, "\(body)")
            (status, _) = try await client.call(.delete, "/v1/bonds/AA:BB:CC:DD:EE:FF")
            #expect(status == .notFound)
            (status, _) = try await client.call(.delete, "/v1/bonds/nonsense")
            #expect(status == .badRequest)
        }
    }

    /// The address change on an emulator with no adapter: 409 for any good body, 400 for bodies the contract
    /// does not allow (addresses, unknown words and keys, wrong types).
    @Test func addressChangeWithoutAnAdapter() async throws {
        let emulator = try makeEmulator()
        try await withAPI(emulator) { client in
            for good in [#"{"address": "random"}"#, #"{"address": "original"}"#] {
                let (status, body) = try await client.call(.put, "/v1/adapter/address", json: good)
                #expect(status == .conflict, "\(good): \(body)")
                #expect((body["error"] as? String)?.contains("no adapter") == true, "\(body)")
            }
            for bad in [
                #"{"address": "C0:11:22:33:44:55"}"#, #"{"address": "Random"}"#, #"{"address": "new"}"#,
                #"{"address": 1}"#, #"{"address": "random", "x": 1}"#, #"{}"#, "[]",
            ] {
                let (status, body) = try await client.call(.put, "/v1/adapter/address", json: bad)
                #expect(status == .badRequest, "\(bad): \(body)")
            }
        }
    }

    @Test func unknownRoutesAnswerJSON404() async throws {
        let emulator = try makeEmulator()
        try await withAPI(emulator) { client in
            let (status, body) = try await client.call(.get, "/v1/nothing")
            #expect(status == .notFound)
            #expect(body["error"] != nil)
        }
    }

    @Test func openAPIDocumentIsServedAndMatchesTheCommittedFile() async throws {
        let committed = try Data(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("Sources/Control/openapi.json"))
        let emulator = try makeEmulator()
        try await withAPI(emulator) { client in
            try await client.execute(uri: "/v1/openapi.json", method: .get) { response in
                #expect(response.status == .ok)
                #expect(Data(response.body.readableBytesView) == committed, "run scripts/embed-assets --openapi")
                let document = try JSONSerialization.jsonObject(with: committed) as? [String: Any]
                let paths = (document?["paths"] as? [String: Any])?.keys.sorted() ?? []
                #expect(paths.contains("/v1/faults/{id}"))
                #expect(paths.contains("/v1/events/stream"))
                #expect(paths.count == 50, "26 own paths, the device list, 23 of them again under /v1/devices/{device}")
                #expect(paths.contains("/v1/firmware") && paths.contains("/v1/devices/{device}/firmware"))
                #expect(paths.contains("/v1/channels/{id}/send") && paths.contains("/v1/devices/{device}/channels"))
                #expect(paths.contains("/v1/devices"))
                #expect(paths.contains("/v1/devices/{device}/faults/{id}"))
                #expect(paths.contains("/v1/relay/snapshot"))
            }
        }
    }
}

@Suite struct ControlTokenTests {
    @Test func nonLoopbackNeedsAToken() throws {
        let emulator = try makeEmulator()
        #expect(throws: ControlSetupError.self) {
            try ControlServer(endpoint: ControlEndpoint(host: "0.0.0.0", port: 0), token: nil, target: emulator)
        }
        #expect(throws: ControlSetupError.self) {
            try ControlServer(endpoint: ControlEndpoint(host: "0.0.0.0", port: 0), token: "", target: emulator)
        }
        #expect(throws: Never.self) {
            try ControlServer(endpoint: ControlEndpoint(host: "127.0.0.1", port: 0), token: nil, target: emulator)
        }
    }

    @Test func everyRequestNeedsTheTokenWhenOneIsSet() async throws {
        let emulator = try makeEmulator()
        try await withAPI(emulator, token: "s3cret", host: "0.0.0.0") { client in
            var (status, body) = try await client.call(.get, "/v1/status")
            #expect(status == .unauthorized)
            #expect(body["error"] as? String == "missing Authorization: Bearer token")
            (status, _) = try await client.call(.get, "/v1/status", headers: [.authorization: "Bearer wrong"])
            #expect(status == .unauthorized)
            (status, _) = try await client.call(
                .post, "/v1/faults", json: #"{"on": "read", "drop": true}"#, headers: [.authorization: "Basic s3cret"])
            #expect(status == .unauthorized)
            (status, _) = try await client.call(.get, "/v1/status", headers: [.authorization: "Bearer s3cret"])
            #expect(status == .ok)
        }
    }

    @Test func endpointsParse() {
        #expect(ControlEndpoint(parsing: "127.0.0.1:8765") == ControlEndpoint(host: "127.0.0.1", port: 8765))
        #expect(ControlEndpoint(parsing: "[::1]:80") == ControlEndpoint(host: "::1", port: 80))
        #expect(ControlEndpoint(parsing: ":9000")?.isLoopback == true)
        #expect(ControlEndpoint(parsing: "localhost:1")?.isLoopback == true)
        #expect(ControlEndpoint(parsing: "0.0.0.0:8765")?.isLoopback == false)
        #expect(ControlEndpoint(parsing: "192.168.1.2:8765")?.isLoopback == false)
        #expect(ControlEndpoint(parsing: "127.0.0.1") == nil)
        #expect(ControlEndpoint(parsing: "127.0.0.1:99999") == nil)
        #expect(ControlEndpoint(parsing: "a b:1") == nil)
    }
}
