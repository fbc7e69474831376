import Bluetooth
import Foundation
import Lexical
import Testing

@testable import Profile

/// Paths to the repository's `profiles/` folder and the bundled fixtures.
enum Paths {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func profile(_ name: String) -> String {
        repository.appendingPathComponent("profiles").appendingPathComponent(name).path
    }

    static var fixtures: URL {
        get throws {
            try #require(Bundle.module.url(forResource: "Fixtures", withExtension: nil))
        }
    }
}

/// Loads a profile from text, failing the test with every diagnostic if it does not load.
func loadProfile(_ json: String, file: String = "test.json", overrides: [(path: String, value: String)] = []) throws -> DeviceProfile {
    do {
        return try ProfileLoader.load(json: json, file: file, overrides: overrides)
    } catch {
        Issue.record("profile did not load:\n\(error.description)")
        throw error
    }
}

/// The diagnostics of a profile given as text, rendered.
func problems(_ json: String, file: String = "test.json", overrides: [(path: String, value: String)] = []) -> [String] {
    ProfileValidator.validate(json: json, file: file, overrides: overrides).map(\.description)
}

func hex(_ text: String) -> [UInt8] {
    ValueForm.hex.bytes(text) ?? []
}

let phone = CentralID(address: BluetoothAddress("11:22:33:44:55:66")!)
let otherPhone = CentralID(address: BluetoothAddress("AA:BB:CC:DD:EE:01")!)
let adapter = EngineEnvironment(adapterAddress: BluetoothAddress("D0:1F:A6:44:B3:6F")!, seed: 42)
