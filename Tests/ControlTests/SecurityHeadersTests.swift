import Emulator
import Foundation
import Testing

@testable import Control

/// Every answer carries the security headers, refusals and errors included (a 404 page or a 401 rendered in a
/// browser is as much the API's page as a 200 is).
@Suite struct SecurityHeadersTests {
    static let expected = [
        "content-security-policy": SecurityHeaders.contentSecurityPolicy,
        "x-content-type-options": "nosniff",
        "x-frame-options": "DENY",
        "referrer-policy": "no-referrer",
    ]

    static func check(_ response: RawResponse, _ what: String) {
        for (name, value) in expected {
            #expect(response.headers[name] == value, "\(what): \(name)")
        }
    }

    @Test func everyErrorAnswerCarriesThem() async throws {
        let emulator = try makeEmulator()
        let token = "s3cret"
        let auth = ("Authorization", "Bearer \(token)")
        let json = ("Content-Type", "application/json")
        try await withLiveServer(emulator, token: token) { _, port in
            let host = "127.0.0.1:\(port)"
            let cases: [(Int, String)] = [
                (200, httpRequest("GET", "/v1/status", host: host, headers: [auth])),
                (400, httpRequest("POST", "/v1/faults", host: host, headers: [auth, json], body: "{")),
                (401, httpRequest("GET", "/v1/status", host: host)),
                (401, httpRequest("GET", "/v1/events", host: host, headers: [("Authorization", "Bearer wrong")])),
                (403, httpRequest("GET", "/v1/status", host: host, headers: [auth, ("Origin", "http://evil.example")])),
                (404, httpRequest("GET", "/v1/nothing", host: host, headers: [auth])),
                (404, httpRequest("DELETE", "/v1/faults/nope", host: host, headers: [auth])),
                (405, httpRequest("DELETE", "/v1/status", host: host, headers: [auth])),
                (409, httpRequest("POST", "/v1/pairing", host: host, headers: [auth, json], body: #"{"prompt": 1, "accept": true}"#)),
                (
                    413,
                    httpRequest(
                        "POST", "/v1/faults", host: host, headers: [auth, json], body: String(repeating: " ", count: (1 << 20) + 1))
                ),
                (415, httpRequest("POST", "/v1/faults", host: host, headers: [auth, ("Content-Type", "text/plain")], body: "{}")),
                (421, httpRequest("GET", "/v1/status", host: "evil.example:\(port)", headers: [auth])),
            ]
            for (status, request) in cases {
                let response = try await rawRequest(port: port, request)
                #expect(response.status == status, "\(request.prefix(60))")
                Self.check(response, "\(status) \(request.prefix(40))")
            }
        }
        // 503 while starting.
        try await withLiveServer(emulator, ready: false) { _, port in
            let response = try await rawRequest(port: port, httpRequest("GET", "/v1/status", host: "127.0.0.1:\(port)"))
            #expect(response.status == 503)
            Self.check(response, "503")
        }
    }
}
