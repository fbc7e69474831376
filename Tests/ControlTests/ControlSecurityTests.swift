import Emulator
import Foundation
import HTTPTypes
import Hummingbird
import Testing

@testable import Control

/// "A hostile web page changes nothing": DNS rebinding (`Host`), CSRF (`Origin`, `Sec-Fetch-Site`,
/// content type), preflights; and what legitimate clients send still works.
@Suite struct ControlSecurityTests {
    static let faultBody = #"{"on": "read", "drop": true}"#

    // MARK: Host (live server: the router test client always says `Host: localhost`)

    /// The review's request: a rebound page posting a fault as `text/plain`.
    @Test func rebindingHostIsRefused() async throws {
        let emulator = try makeEmulator()
        try await withLiveServer(emulator) { _, port in
            var response = try await rawRequest(
                port: port,
                httpRequest(
                    "POST", "/v1/faults", host: "evil.example:\(port)",
                    headers: [
                        ("Origin", "http://evil.example:\(port)"), ("Content-Type", "text/plain"),
                    ], body: Self.faultBody))
            #expect(response.status == 421)
            #expect(response.json["acceptedHosts"] as? [String] == ["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)"])
            #expect(response.error.contains("evil.example"))

            // Reading what the phone app wrote is refused the same way.
            response = try await rawRequest(port: port, httpRequest("GET", "/v1/events", host: "evil.example:\(port)"))
            #expect(response.status == 421)
            #expect(response.json["events"] == nil)
            response = try await rawRequest(port: port, httpRequest("GET", "/v1/events/stream", host: "evil.example"))
            #expect(response.status == 421)
        }
        #expect(await emulator.faults().isEmpty)
    }

    @Test func missingOrRepeatedHostIsRefused() async throws {
        let emulator = try makeEmulator()
        try await withLiveServer(emulator) { _, port in
            var response = try await rawRequest(port: port, httpRequest("GET", "/v1/status", host: nil, version: "HTTP/1.0"))
            #expect(response.status == 421)
            #expect(response.error.hasPrefix("missing Host header"))
            response = try await rawRequest(
                port: port, httpRequest("GET", "/v1/status", host: "127.0.0.1:\(port)", headers: [("Host", "evil.example")]))
            #expect(response.status == 421)
            #expect(response.error.hasPrefix("more than one Host header"))
        }
    }

    @Test func theServersOwnHostsAndAllowedOnesAreAccepted() async throws {
        let emulator = try makeEmulator()
        let access = try ControlAccess(allowedHosts: ["rig.local", "localhost:9000"], allowedOrigins: [])
        try await withLiveServer(emulator, access: access) { _, port in
            for host in [
                "127.0.0.1:\(port)", "localhost:\(port)", "LocalHost:\(port)", "[::1]:\(port)", "rig.local:\(port)", "localhost:9000",
            ] {
                let response = try await rawRequest(port: port, httpRequest("GET", "/v1/status", host: host))
                #expect(response.status == 200, "\(host)")
            }
            for host in [
                "localhost:\(port + 1)", "localhost", "127.0.0.2:\(port)", "rig.local:9000", "evil.example:9000", "localhost.:\(port)",
                "127.0.0.1:", "",
            ] {
                let response = try await rawRequest(port: port, httpRequest("GET", "/v1/status", host: host))
                #expect(response.status == 421, "\(host)")
            }
        }
    }

    @Test func hostRulesFollowTheBoundAddress() throws {
        func policy(_ host: String, allowing extra: [String] = []) throws -> AccessPolicy {
            AccessPolicy(
                endpoint: ControlEndpoint(host: host, port: 8765),
                access: try ControlAccess(allowedHosts: extra, allowedOrigins: []), listening: ListeningPort())
        }
        func accepts(_ policy: AccessPolicy, _ host: String) -> Bool { HostName(host[...]).map(policy.accepts) ?? false }

        let wildcard = try policy("0.0.0.0", allowing: ["rig.local"])
        for host in ["10.1.2.3:8765", "[fe80::1]:8765", "localhost:8765", "rig.local:8765", "RIG.local:8765"] {
            #expect(accepts(wildcard, host), "\(host)")
        }
        for host in ["evil.example:8765", "10.1.2.3:8766", "10.1.2.3", "rig.local.evil.example:8765"] {
            #expect(!accepts(wildcard, host), "\(host)")
        }

        let specific = try policy("192.168.1.5")
        #expect(accepts(specific, "192.168.1.5:8765"))
        for host in ["localhost:8765", "10.0.0.1:8765", "127.0.0.1:8765"] { #expect(!accepts(specific, host), "\(host)") }
        #expect(specific.acceptedHosts() == ["192.168.1.5:8765"])

        let loopback = try policy("127.0.0.1")
        for host in ["[0:0:0:0:0:0:0:1]:8765", "[::1]:8765", "127.0.0.1:8765"] { #expect(accepts(loopback, host), "\(host)") }
        for host in ["127.0.0.2:8765", "[::1]", "::1:8765", "[::1:8765", "localhost:8765@evil", "a b:8765", "localhost:99999"] {
            #expect(!accepts(loopback, host), "\(host)")
        }

        #expect(throws: ControlSetupError.self) { try ControlAccess(allowedHosts: ["http://rig.local"], allowedOrigins: []) }
        #expect(throws: ControlSetupError.self) { try ControlAccess(allowedHosts: [], allowedOrigins: ["*"]) }
        #expect(throws: ControlSetupError.self) { try ControlAccess(allowedHosts: [], allowedOrigins: ["http://localhost:3000/"]) }
        #expect(throws: Never.self) { try ControlAccess(allowedHosts: ["[::1]:9000"], allowedOrigins: ["null", "https://dash.example"]) }
    }

    // MARK: Origin and fetch metadata (router: `Host: localhost`, port 80, so the own origin is http://localhost)

    @Test func foreignOriginsAreRefused() async throws {
        let emulator = try makeEmulator()
        try await withAPI(emulator) { client in
            for origin in ["http://evil.example", "null", "http://localhost:8080", "https://localhost", "http://127.0.0.1.evil.example"] {
                var (status, body) = try await client.call(.post, "/v1/faults", json: Self.faultBody, headers: [.origin: origin])
                #expect(status == .forbidden, "\(origin)")
                #expect((body["error"] as? String)?.contains("--control-allow-origin") == true)
                (status, _) = try await client.call(.get, "/v1/events", headers: [.origin: origin])
                #expect(status == .forbidden, "\(origin)")
            }
        }
        #expect(await emulator.faults().isEmpty)
    }

    @Test func ownAndAllowedOriginsAndNoOriginPass() async throws {
        let emulator = try makeEmulator()
        let access = try ControlAccess(allowedHosts: [], allowedOrigins: ["http://localhost:3000", "null"])
        try await withAPI(emulator, access: access) { client in
            // No Origin: curl, gattemu ctl.
            var (status, _) = try await client.call(.post, "/v1/faults", json: Self.faultBody)
            #expect(status == .created)
            // The API's own origin.
            (status, _) = try await client.call(.post, "/v1/faults", json: Self.faultBody, headers: [.origin: "http://localhost"])
            #expect(status == .created)
            for origin in ["http://localhost:3000", "null"] {
                try await client.execute(uri: "/v1/status", method: .get, headers: [.origin: origin]) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.accessControlAllowOrigin] == origin)
                    #expect(response.headers[values: .vary].contains("Origin"))
                }
            }
            // An error answer to an allowed page carries the CORS headers too, so the page can read it.
            try await client.execute(
                uri: "/v1/characteristics/nope/notify", method: .post,
                headers: [.origin: "http://localhost:3000", .contentType: "application/json"],
                body: ByteBuffer(string: #"{"hex": "01"}"#)
            ) { response in
                #expect(response.status == .notFound)
                #expect(response.headers[.accessControlAllowOrigin] == "http://localhost:3000")
            }
        }
        #expect(await emulator.faults().count == 2)
    }

    @Test func crossSiteRequestsWithoutOriginAreRefused() async throws {
        let emulator = try makeEmulator()
        try await withAPI(emulator) { client in
            for site in ["cross-site", "same-site"] {
                var (status, _) = try await client.call(.post, "/v1/reset", headers: [.secFetchSite: site, .secFetchMode: "no-cors"])
                #expect(status == .forbidden, "\(site)")
                (status, _) = try await client.call(
                    .get, "/v1/events/stream", headers: [.secFetchSite: site, .secFetchMode: "no-cors", .secFetchDest: "image"])
                #expect(status == .forbidden, "\(site)")
                (status, _) = try await client.call(
                    .get, "/v1/status", headers: [.secFetchSite: site, .secFetchMode: "navigate", .secFetchDest: "iframe"])
                #expect(status == .forbidden, "\(site)")
            }
            // Following a link to the API, typing its address, or a page of the API itself.
            var (status, _) = try await client.call(
                .get, "/v1/status", headers: [.secFetchSite: "cross-site", .secFetchMode: "navigate", .secFetchDest: "document"])
            #expect(status == .ok)
            (status, _) = try await client.call(
                .get, "/v1/status", headers: [.secFetchSite: "none", .secFetchMode: "navigate", .secFetchDest: "document"])
            #expect(status == .ok)
            (status, _) = try await client.call(.post, "/v1/reset", headers: [.secFetchSite: "same-origin", .origin: "http://localhost"])
            #expect(status == .ok)
        }
    }

    // MARK: Content type

    @Test func bodiesMustBeDeclaredJSON() async throws {
        let emulator = try makeEmulator()
        try await withAPI(emulator) { client in
            for contentType in [
                "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=latin1",
                "application/jsonx",
            ] {
                let (status, body) = try await client.call(.post, "/v1/faults", json: Self.faultBody, headers: [.contentType: contentType])
                #expect(status == .unsupportedMediaType, "\(contentType)")
                #expect((body["error"] as? String)?.contains("application/json") == true)
            }
            try await client.execute(uri: "/v1/faults", method: .post, body: ByteBuffer(string: Self.faultBody)) { response in
                #expect(response.status == .unsupportedMediaType)
                #expect(String(buffer: response.body).contains("a request body needs Content-Type: application/json"))
            }
            #expect(await emulator.faults().isEmpty)

            for contentType in ["application/json", "application/json; charset=utf-8", "Application/JSON;charset=\"UTF-8\""] {
                let (status, _) = try await client.call(.post, "/v1/faults", json: Self.faultBody, headers: [.contentType: contentType])
                #expect(status == .created, "\(contentType)")
            }
            // Bodiless requests need no content type.
            var (status, _) = try await client.call(.post, "/v1/reset")
            #expect(status == .ok)
            (status, _) = try await client.call(.post, "/v1/triggers/jam")
            #expect(status == .ok)
            (status, _) = try await client.call(.delete, "/v1/faults")
            #expect(status == .ok)
        }
    }

    // MARK: OPTIONS, preflights, 405

    @Test func optionsAnswersAllow() async throws {
        let emulator = try makeEmulator()
        try await withAPI(emulator) { client in
            for (path, allow) in [
                ("/v1/faults", "DELETE, GET, POST, OPTIONS"), ("/v1/faults/f1", "DELETE, OPTIONS"),
                ("/v1/characteristics/tx/notify", "POST, OPTIONS"), ("/v1/status", "GET, OPTIONS"),
            ] {
                try await client.execute(uri: path, method: .options) { response in
                    #expect(response.status == .noContent, "\(path)")
                    #expect(response.headers[.allow] == allow, "\(path)")
                    #expect(response.headers[.accessControlAllowOrigin] == nil)
                }
            }
            var (status, _) = try await client.call(.options, "/v1/nothing")
            #expect(status == .notFound)
            let body: [String: Any]
            (status, body) = try await client.call(.delete, "/v1/status")
            #expect(status == .methodNotAllowed)
            #expect(body["allowed"] as? [String] == ["GET", "OPTIONS"])
        }
    }

    @Test func preflightsFromForeignOriginsAreRefusedAndAllowedOnesAnswered() async throws {
        let emulator = try makeEmulator()
        let access = try ControlAccess(allowedHosts: [], allowedOrigins: ["http://localhost:3000"])
        try await withAPI(emulator, token: "s3cret", access: access) { client in
            let preflight: HTTPFields = [.accessControlRequestMethod: "POST", .accessControlRequestHeaders: "authorization, content-type"]
            var headers = preflight
            headers[.origin] = "http://evil.example"
            try await client.execute(uri: "/v1/faults", method: .options, headers: headers) { response in
                #expect(response.status == .forbidden)
                #expect(response.headers[.accessControlAllowOrigin] == nil)
            }
            // Browsers send preflights without the token.
            headers[.origin] = "http://localhost:3000"
            try await client.execute(uri: "/v1/faults", method: .options, headers: headers) { response in
                #expect(response.status == .noContent)
                #expect(response.headers[.accessControlAllowOrigin] == "http://localhost:3000")
                #expect(response.headers[.accessControlAllowMethods] == "DELETE, GET, POST, OPTIONS")
                let allowed = (response.headers[.accessControlAllowHeaders] ?? "").lowercased()
                #expect(allowed.contains("authorization") && allowed.contains("content-type"))
                #expect(response.headers[values: .vary].contains("Origin"))
            }
            // The actual request still needs the token; the refusal is readable by the allowed page.
            try await client.execute(
                uri: "/v1/faults", method: .post, headers: [.origin: "http://localhost:3000", .contentType: "application/json"],
                body: ByteBuffer(string: Self.faultBody)
            ) { response in
                #expect(response.status == .unauthorized)
                #expect(response.headers[.accessControlAllowOrigin] == "http://localhost:3000")
            }
            let (status, _) = try await client.call(
                .post, "/v1/faults", json: Self.faultBody,
                headers: [.origin: "http://localhost:3000", .authorization: "Bearer s3cret"])
            #expect(status == .created)
        }
    }

    // MARK: Errors

    @Test func internalErrorsShowOnlyAReference() async throws {
        struct StorageFailure: Error, CustomStringConvertible {
            var description: String { "cannot open /var/lib/gattemu/secret.json" }
        }
        let router = Router()
        router.add(middleware: JSONErrorMiddleware())
        router.get("boom") { _, _ -> Response in throw StorageFailure() }
        let client = RouterClient(router: router)
        try await client.execute(uri: "/boom", method: .get) { response in
            #expect(response.status == .internalServerError)
            let text = String(buffer: response.body)
            #expect(!text.contains("/var/lib") && !text.contains("StorageFailure") && !text.contains("secret"), "\(text)")
            let body = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
            let reference = body?["reference"] as? String ?? ""
            #expect(reference.count == 8)
            #expect(body?["error"] as? String == "internal error (reference \(reference); details in gattemu's log)")
            #expect(body?["status"] as? Int == 500)
        }
    }

    @Test func tokenFilesMustBePrivate() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gattemu-token-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(
            FileManager.default.createFile(
                atPath: path, contents: Data("s3cret\r\nsecond line\n".utf8), attributes: [.posixPermissions: 0o600]))
        #expect(try ControlToken.read(file: path, option: "--control-token-file") == "s3cret")
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: path)
        #expect(throws: ControlSetupError.self) { try ControlToken.read(file: path, option: "--control-token-file") }
        try FileManager.default.setAttributes([.posixPermissions: 0o400], ofItemAtPath: path)
        #expect(try ControlToken.read(file: path, option: "--control-token-file") == "s3cret")
        try FileManager.default.removeItem(atPath: path)
        #expect(FileManager.default.createFile(atPath: path, contents: Data("\n".utf8), attributes: [.posixPermissions: 0o600]))
        #expect(throws: ControlSetupError.self) { try ControlToken.read(file: path, option: "--control-token-file") }
        #expect(throws: ControlSetupError.self) { try ControlToken.read(file: path + ".missing", option: "--control-token-file") }
    }
}
