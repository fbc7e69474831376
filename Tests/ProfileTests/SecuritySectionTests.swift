import Bluetooth
import Testing

@testable import Profile

/// The profile's `security` section: what it accepts, where its errors point, and when a profile without one
/// still pairs.
@Suite struct SecuritySectionTests {
    static func profile(_ security: String?, flags: String = #"["read"]"#) -> String {
        """
        { "format": 1\(security.map { ",\n  \"security\": \($0)" } ?? ""),
          "services": [ { "id": "s", "uuid": "180f", "characteristics": [ { "id": "level", "uuid": "2a19", "flags": \(flags) } ] } ] }
        """
    }

    @Test func everyFieldIsRead() throws {
        let profile = try loadProfile(Self.profile(#"{"io": "KeyboardOnly", "pairing": "accept", "passkey": "000123", "confirm": "api"}"#))
        let security = try #require(profile.pairingSecurity)
        #expect(security.io == .keyboardOnly && security.pairing == .accept && security.passkey == 123 && security.confirm == .api)
        #expect(try loadProfile(Self.profile(#"{"io": "KeyboardDisplay", "passkey": 999999}"#)).security?.passkey == 999_999)
        #expect(try loadProfile(Self.profile(#"{"pairing": "refuse"}"#)).pairingSecurity?.io == .noInputNoOutput, "just works by default")
        #expect(try loadProfile(Self.profile(#"{"pairing": "refuse"}"#)).pairingSecurity?.secureConnections == .on, "the kernel's default")
        for mode in [SecureConnectionsMode.on, .off] {
            #expect(try loadProfile(Self.profile(#"{"secureConnections": "\#(mode.rawValue)"}"#)).security?.secureConnections == mode)
        }
    }

    @Test func aProfileNeedsAnAgentOnlyWhenSomethingAsksForEncryption() throws {
        #expect(try loadProfile(Self.profile(nil)).pairingSecurity == nil)
        #expect(try loadProfile(Self.profile(nil, flags: #"["read", "encrypt-authenticated-read"]"#)).pairingSecurity == .standard)
        #expect(try loadProfile(Self.profile(nil, flags: #"["write", "secure-write"]"#)).pairingSecurity == .standard)
    }

    @Test func mistakesAreLocatedAndExplained() {
        let json = Self.profile(#"{"io": "Keyboard", "pairing": "maybe", "confirm": "later", "passkey": 1000000, "pin": 1}"#)
        let found = problems(json)
        #expect(found.contains { $0.contains("test.json:2:") && $0.contains("security.io") && $0.contains("KeyboardDisplay") }, "\(found)")
        #expect(found.contains { $0.contains("security.pairing") && $0.contains("\"accept\" or \"refuse\"") }, "\(found)")
        #expect(found.contains { $0.contains("security.confirm") }, "\(found)")
        #expect(found.contains { $0.contains("security.passkey") && $0.contains("out of range") }, "\(found)")
        #expect(found.contains { $0.contains("security.pin") && $0.contains("unknown key") }, "\(found)")
        // The kernel's Secure Connections Only mode drops every LE link once encrypted (seen in the sandbox, Linux 6.1).
        let only = problems(Self.profile(#"{"io": "DisplayYesNo", "secureConnections": "only"}"#))
        #expect(
            only.contains {
                $0.contains("security.secureConnections") && $0.contains("not possible on Linux") && $0.contains("secure-read")
            }, "\(only)")
        let legacy = problems(Self.profile(#"{"secureConnections": "legacy"}"#))
        #expect(legacy.contains { $0.contains("security.secureConnections") && $0.contains("\"off\"") }, "\(legacy)")
        let shortPasskey = problems(Self.profile(#"{"io": "KeyboardOnly", "passkey": "12345"}"#))
        #expect(shortPasskey.contains { $0.contains("six decimal digits") }, "\(shortPasskey)")
    }

    /// A device that shows its passkey cannot choose it on BlueZ (the kernel draws it): the profile says so.
    @Test func aFixedPasskeyNeedsAKeyboard() {
        let found = problems(Self.profile(#"{"io": "DisplayOnly", "passkey": 123456}"#))
        #expect(found.contains { $0.contains("security.passkey") && $0.contains("keyboard") && $0.contains("at random") }, "\(found)")
    }
}
