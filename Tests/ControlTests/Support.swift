import Control
import Emulator
import Foundation
import Hummingbird
import Profile
import Testing

/// The repository's `profiles/` folder.
let profilesFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("profiles")

/// An emulator for `profile` that was never started: the real runtime, behaviour and fault engines and event
/// log, with no BlueZ side (nothing reaches a bus; notifications are logged as not sent).
func makeEmulator(_ profile: String = "noke-lock", seed: UInt64 = 0) throws -> Emulator {
    let loaded = try ProfileLoader.load(path: profilesFolder.appendingPathComponent("\(profile).json").path)
    var options = EmulatorOptions()
    options.seed = seed
    return try Emulator(profile: loaded, options: options, log: try EventLog(format: .json))
}

/// Runs `body` against the control API of `target` through `RouterClient`, which sends `Host: localhost`, that
/// is port 80: the server is configured for port 80 (never bound).
func withAPI<T>(
    _ target: any ControlTarget, token: String? = nil, host: String = "127.0.0.1",
    access: ControlAccess = ControlAccess(), limits: ControlLimits = ControlLimits(),
    _ body: @Sendable (RouterClient) async throws -> T
) async throws -> T {
    let server = try ControlServer(
        endpoint: ControlEndpoint(host: host, port: 80), token: token, target: target, access: access, limits: limits)
    return try await body(RouterClient(router: server.router()))
}

extension RouterClient {
    /// Sends `json` (text) and returns status and the parsed JSON body.
    func call(_ method: HTTPRequest.Method, _ uri: String, json: String? = nil, headers: HTTPFields = [:]) async throws -> (
        HTTPResponse.Status, [String: Any]
    ) {
        var headers = headers
        if json != nil, headers[.contentType] == nil { headers[.contentType] = "application/json" }
        return try await execute(uri: uri, method: method, headers: headers, body: json.map { ByteBuffer(string: $0) }) { response in
            let object = (try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView))) as? [String: Any]
            #expect(response.headers[.contentType] == "application/json", "\(method) \(uri) answers JSON")
            return (response.status, object ?? [:])
        }
    }
}
