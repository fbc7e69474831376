import FoundationEssentials
import Testing

@testable import TextEscaping

/// No HTML special character reaches HTML raw, whatever scalars surround it: the escapers work on UTF-8 bytes,
/// so `"\u{600}<"` and `">\u{301}"` (each one `Character`, equal to neither `<` nor `>`) are escaped too.
@Suite struct HTMLTextTests {
    static let surroundings = [
        "\u{600}", "\u{301}", "\u{20DD}", "\u{FE0F}", "\u{200D}", "\u{1F3FB}", "e\u{301}", "\u{1100}\u{1161}", "\r", "\u{0}",
    ]

    @Test func escapesTheFiveSpecialCharacters() {
        #expect(
            HTMLText.escaped(#"<a href="x" title='y'>&amp;</a>"#) == "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;")
        #expect(HTMLText.escaped("plain, é ✓ \u{2028}") == "plain, é ✓ \u{2028}")
    }

    @Test func combiningAndPrependedScalarsHideNothing() {
        #expect(HTMLText.escaped("\u{600}<") == "\u{600}&lt;")
        #expect(HTMLText.escaped(">\u{301}") == "&gt;\u{301}")
        #expect(
            HTMLText.escaped("\u{600}</title>\u{301}<meta http-equiv=refresh content=0>")
                == "\u{600}&lt;/title&gt;\u{301}&lt;meta http-equiv=refresh content=0&gt;")
        for special in ["<", ">", "&", "\"", "'"] {
            for before in Self.surroundings + [""] {
                for after in Self.surroundings + [""] {
                    let text = before + special + after
                    let escaped = HTMLText.escaped(text)
                    #expect(!escaped.unicodeScalars.contains { "<>\"'".unicodeScalars.contains($0) }, "\(text.unicodeScalars.map(\.value))")
                    #expect(escaped == before + HTMLText.reference(for: UInt8(ascii: special.unicodeScalars.first!))! + after)
                }
            }
        }
    }

    @Test func scriptDataCannotEndItsElementAndParsesToTheSameValue() throws {
        let hostile = [
            "</script><meta http-equiv=refresh content=0>", "\u{600}</script>\u{301}", "<!--<script>", "a\u{2028}b\u{2029}c", "&lt;",
            "\u{600}<\u{301}>&",
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes  // as the report's
        let json = String(decoding: try encoder.encode(hostile), as: UTF8.self)
        let data = HTMLText.scriptData(json: json)
        #expect(!data.unicodeScalars.contains { ["<", ">", "&", "\u{2028}", "\u{2029}"].contains($0) }, "\(data)")
        #expect(data.contains(#"\u003c/script\u003e"#) && data.contains(#"a\u2028b\u2029c"#))
        #expect(try JSONDecoder().decode([String].self, from: Data(data.utf8)) == hostile)
        for before in Self.surroundings {
            for special in ["<", ">", "&", "\u{2028}", "\u{2029}"] {
                let text = String(decoding: try encoder.encode([before + special + before]), as: UTF8.self)
                let data = HTMLText.scriptData(json: text)
                #expect(!data.unicodeScalars.contains { ["<", ">", "&", "\u{2028}", "\u{2029}"].contains($0) })
                #expect(try JSONDecoder().decode([String].self, from: Data(data.utf8)) == [before + special + before])
            }
        }
    }
}
