import Foundation
import Testing

@testable import Control

/// `gattemu run` binds the API before the device is registered: until it has started, the API says so
/// (503, `Retry-After`) instead of refusing connections, and the dashboard's page is already served.
@Suite struct StartingTests {
    @Test func requestsWaitForTheDeviceThenReachIt() async throws {
        let emulator = try makeEmulator()
        try await withLiveServer(emulator, token: "t0ken", ready: false) { server, port in
            let host = "127.0.0.1:\(port)"
            let auth = [("Authorization", "Bearer t0ken")]
            var response = try await rawRequest(port: port, httpRequest("GET", "/v1/status", host: host, headers: auth))
            #expect(response.status == 503)
            #expect(response.headers["retry-after"] == "1")
            #expect(response.error.hasPrefix("gattemu is starting"))
            response = try await rawRequest(
                port: port,
                httpRequest(
                    "POST", "/v1/faults", host: host,
                    headers: auth + [("Content-Type", "application/json")], body: #"{"on": "read", "drop": true}"#))
            #expect(response.status == 503)
            // The token is still checked first, and the page (no data) is served.
            response = try await rawRequest(port: port, httpRequest("GET", "/v1/status", host: host))
            #expect(response.status == 401)
            response = try await rawRequest(port: port, httpRequest("GET", "/", host: host))
            #expect(response.status == 200)

            server.readiness.markReady()
            response = try await rawRequest(port: port, httpRequest("GET", "/v1/status", host: host, headers: auth))
            #expect(response.status == 200)
            response = try await rawRequest(
                port: port,
                httpRequest(
                    "POST", "/v1/faults", host: host,
                    headers: auth + [("Content-Type", "application/json")], body: #"{"on": "read", "drop": true}"#))
            #expect(response.status == 201)
        }
        #expect(await emulator.faults().count == 1)
    }
}
