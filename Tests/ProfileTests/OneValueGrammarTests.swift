import Foundation
import Lexical
import Testing

@testable import Profile

/// A value, a duration or a passkey is written the same way wherever a profile writes it: in a characteristic's
/// value, a rule, a variable or a fault spec (the grammar is ``ValueForm``/``Patterns``, below the control API).
@Suite struct OneValueGrammarTests {
    static let profile = """
        { "format": 1,
          "variables": { "key": { "hex": "0x01" }, "blob": { "base64": "UWA" } },
          "services": [ { "id": "s", "uuid": "1812", "characteristics": [
            { "id": "c", "uuid": "2a4d", "flags": ["read", "write", "notify"], "value": { "hex": "0x01" } } ] } ],
          "rules": [ { "id": "r", "on": { "write": "c" }, "do": [ { "delay": "1.5s" }, { "delay": "250" } ] } ],
          "faults": [
            { "on": "read", "characteristic": "c", "corrupt": { "at": 0, "hex": "0x01" } },
            { "on": "notify", "characteristic": "c", "corrupt": { "xor": "0X ff" } },
            { "on": "start", "silence": "1.5s" } ] }
        """

    @Test func aHexValueWithPrefixIsValidInEveryPlace() throws {
        let profile = try loadProfile(Self.profile)
        #expect(profile.variables.first { $0.name == "key" }?.value == .bytes([0x01]))
        #expect(profile.variables.first { $0.name == "blob" }?.value == .bytes([0x51, 0x60]))
        #expect(
            profile.faults.map(\.action) == [
                .corrupt(.replace(at: 0, bytes: [0x01])), .corrupt(.xor(at: 0, mask: [0xFF])), .silence(milliseconds: 1500),
            ])
        #expect(profile.rules.first?.actions.map(\.kind) == [.delay(.milliseconds(1500)), .delay(.milliseconds(250))])
    }

    @Test func theFaultDecoderAndTheValueDecoderRefuseAlike() {
        for bad in ["0x0", "0xg1", " 0x01"] {
            let text = Self.profile.replacingOccurrences(of: "\"at\": 0, \"hex\": \"0x01\"", with: "\"at\": 0, \"hex\": \"\(bad)\"")
                .replacingOccurrences(of: "\"value\": { \"hex\": \"0x01\" }", with: "\"value\": { \"hex\": \"\(bad)\" }")
            let found = problems(text)
            #expect(found.contains { $0.contains("faults[0].corrupt") }, "\(bad): \(found)")
            #expect(found.contains { $0.contains(".value.hex") }, "\(bad): \(found)")
        }
    }
}
