import Foundation
import Testing
import TextEscaping

@Suite struct JSONTextTests {
    /// Every string, control characters, quotes, backslashes and scalars outside ASCII included, comes back from
    /// a JSON parser as it went in.
    @Test func quotedStringsParseBackToThemselves() throws {
        var samples = [
            "", "plain", "quote \" backslash \\ slash /", "line\nfeed\rreturn\ttab", "\u{00}\u{01}\u{1F}\u{7F}",
            "é ü 漢字 🔒 \u{202E}rtl", "e\u{301}\u{1B}[31m", "\\u0041",
        ]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let scalars = (0..<Int.random(in: 0...24, using: &generator)).compactMap { _ in
                Unicode.Scalar(
                    [UInt32.random(in: 0...0x7F, using: &generator), UInt32.random(in: 0x80...0x2FFF, using: &generator)][
                        Int.random(in: 0...1, using: &generator)])
            }
            samples.append(String(String.UnicodeScalarView(scalars)))
        }
        for sample in samples {
            let quoted = JSONText.quoted(sample)
            let parsed = try JSONSerialization.jsonObject(with: Data("[\(quoted)]".utf8)) as? [String]
            #expect(parsed == [sample], "\(quoted)")
            var appended = Array("x".utf8)
            JSONText.appendQuoted(sample, to: &appended)
            #expect(appended == Array("x\(quoted)".utf8))
        }
        #expect(JSONText.quoted("a\u{01}\"\\\n") == #""a\u0001\"\\\n""#)
    }
}
