import Bluetooth
import Lexical
import Testing

/// Each pattern of ``Patterns`` matches exactly what its parser accepts: the schemas and the decoders agree.
@Suite struct PatternParityTests {
    /// Knuth's MMIX linear congruential generator, so that a failure names a case that comes back.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state ^ (state >> 29)
        }
    }

    /// `count` strings of up to `length` characters drawn from `alphabet`.
    static func strings(_ alphabet: String, length: Int, count: Int = 4000, seed: UInt64) -> [String] {
        let characters = Array(alphabet)
        var generator = Generator(state: seed)
        return (0..<count).map { _ in
            String((0..<Int.random(in: 0...length, using: &generator)).map { _ in characters.randomElement(using: &generator)! })
        }
    }

    static func check(_ pattern: String, _ alphabet: String, length: Int, seed: UInt64, accepts: (String) -> Bool) throws {
        let regex = try Regex(pattern)
        var matched = 0
        for text in strings(alphabet, length: length, seed: seed) {
            let matches = (try? regex.wholeMatch(in: text)) != nil
            #expect(matches == accepts(text), "\(pattern) vs parser on \"\(text)\"")
            if matches { matched += 1 }
        }
        // Both verdicts were exercised.
        #expect(matched > 100)
        #expect(matched < 3900)
    }

    @Test func hex() throws {
        try Self.check(Patterns.hex, "0123456789abcdefABxX :-\tg", length: 9, seed: 1) { StrictParse.hex($0) != nil }
        try Self.check(Patterns.nonEmptyHex, "0aFxX :-\t", length: 7, seed: 2) { StrictParse.hex($0).map { !$0.isEmpty } ?? false }
    }

    @Test func base64() throws {
        try Self.check(Patterns.base64, "AQz09+/= \n", length: 9, seed: 3) { StrictParse.base64($0) != nil }
        try Self.check(Patterns.nonEmptyBase64, "AQz+= \n", length: 9, seed: 8) { StrictParse.base64($0).map { !$0.isEmpty } ?? false }
    }

    @Test func durations() throws {
        try Self.check(Patterns.duration, "0159.ms", length: 9, seed: 4) { StrictParse.milliseconds($0) != nil }
    }

    @Test func addressesPasskeysIdentifiersAndErrorCodes() throws {
        let addresses = Self.strings("0aF:", length: 3, count: 50, seed: 5).map { "\($0)0:00:00:00:00:01" }
        for text in addresses + ["AA:BB:CC:DD:EE:FF", "aa:bb:cc:dd:ee:ff", "AA-BB-CC-DD-EE-FF", "AABBCCDDEEFF"] {
            #expect(((try? Regex(Patterns.address).wholeMatch(in: text)) != nil) == StrictParse.isAddress(text), "\(text)")
            #expect(StrictParse.address(text) == (StrictParse.isAddress(text) ? BluetoothAddress(text) : nil))
        }
        try Self.check(Patterns.passkey, "0123456789a", length: 7, seed: 6) { StrictParse.passkey($0) != nil }
        try Self.check(Patterns.identifier, "aZ9_-.", length: 4, seed: 7) { StrictParse.isIdentifier($0) }
        let errorCode = try Regex(Patterns.applicationError)
        let digits = Array("0179aAfFgx -")
        for prefix in ["0x", "0X", "1x", "x0", "0"] {
            for high in digits {
                for low in digits {
                    let text = prefix + String(high) + String(low)
                    #expect(((try? errorCode.wholeMatch(in: text)) != nil) == (StrictParse.applicationError(text) != nil), "\(text)")
                }
            }
        }
        #expect(StrictParse.applicationError("0x9F") == 0x9F)
        #expect(StrictParse.applicationError("0x7F") == nil)
    }
}

@Suite struct ValueFormTests {
    @Test func oneGrammarForBytes() {
        #expect(ValueForm.hex.bytes("0x01") == [0x01])
        #expect(ValueForm.hex.bytes("0X51 60:0a-ff") == [0x51, 0x60, 0x0A, 0xFF])
        #expect(ValueForm.hex.bytes("0x") == [])
        for bad in ["0x0", " 0x01", "0x0x01", "516", "5g"] { #expect(ValueForm.hex.bytes(bad) == nil, "\(bad)") }
        #expect(ValueForm.base64.bytes("UWA=") == [0x51, 0x60])
        #expect(ValueForm.base64.bytes("UWA") == [0x51, 0x60])
        #expect(ValueForm.base64.bytes("UW A=\n") == [0x51, 0x60])
        #expect(ValueForm.base64.bytes("UWAK/w==") == [0x51, 0x60, 0x0A, 0xFF])
        for bad in ["U", "UWA==", "UW=A", "UWAK=", "!!", "UW="] {
            #expect(ValueForm.base64.bytes(bad) == nil, "\(bad)")
        }
        #expect(ValueForm.utf8.bytes("é") == [0xC3, 0xA9])
    }

    @Test func limitsFollowTheAttributeLimit() {
        #expect(ATTMTU.maximumValueLength == 512)
        #expect(ValueForm.utf8.textLimit == ATTMTU.maximumValueLength)
        // The base64 text of the longest value fits, one more group does not.
        let longest = String(repeating: "AAAA", count: ATTMTU.maximumValueLength / 3) + "AAA="
        #expect(longest.count == ValueForm.base64.textLimit)
        #expect(ValueForm.base64.bytes(longest)?.count == ATTMTU.maximumValueLength)
    }
}
