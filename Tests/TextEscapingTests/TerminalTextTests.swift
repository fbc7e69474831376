import FoundationEssentials
import Testing

@testable import TextEscaping

/// Control characters from profiles, centrals, devices and servers never reach a terminal raw, whatever
/// scalars surround them.
@Suite struct TerminalTextTests {
    @Test func escapesControlsAndBidiControlsOnly() {
        #expect(TerminalText.escaped("plain \\ text, tab\tand é ✓") == "plain \\ text, tab\tand é ✓")
        #expect(TerminalText.escaped("a\u{1B}[2Jb") == "a\\u{1B}[2Jb")
        #expect(TerminalText.escaped("line\nnext\rcr\u{0}nul\u{7F}del") == "line\\nnext\\rcr\\u{0}nul\\u{7F}del")
        #expect(TerminalText.escaped("c1 \u{9B}31m \u{85}") == "c1 \\u{9B}31m \\u{85}")
        #expect(TerminalText.escaped("rtl \u{202E}evil\u{2066}") == "rtl \\u{202E}evil\\u{2066}")
        #expect(TerminalText.escaped("marks \u{200E}\u{200F}\u{61C}") == "marks \\u{200E}\\u{200F}\\u{61C}")
        // U+00C2, U+D8xx and U+2xxx neighbours of the escaped ranges are kept.
        #expect(TerminalText.escaped("Â \u{2020} \u{2029} \u{600} \u{61B}") == "Â \u{2020} \u{2029} \u{600} \u{61B}")
    }

    /// Every scalar that needs an escape, with a combining mark after it and a prepended concatenation mark
    /// before it (each pair one `Character`): escaped all the same.
    @Test func combiningAndPrependedScalarsHideNothing() {
        let specials = (UInt32(0)...0x206F).compactMap { Unicode.Scalar($0) }.filter(TerminalText.needsEscape)
        // C0 but tab, DEL, C1, U+061C, U+200E–U+200F, U+202A–U+202E, U+2066–U+2069.
        #expect(specials.count == 31 + 1 + 32 + 1 + 2 + 5 + 4)
        for special in specials {
            for text in ["\u{600}\(special)", "\(special)\u{301}", "\u{600}\(special)\u{301}\u{20DD}", "e\u{301}\(special)\u{FE0F}"] {
                let raw = { (escaped: String) in escaped.unicodeScalars.filter(TerminalText.needsEscape).map(\.value) }
                #expect(
                    raw(TerminalText.escaped(text)).isEmpty, "U+\(String(special.value, radix: 16)) in \(text.unicodeScalars.map(\.value))")
                #expect(
                    raw(TerminalText.escaped(text, limit: 100)).isEmpty,
                    "U+\(String(special.value, radix: 16)) in \(text.unicodeScalars.map(\.value))")
                #expect(
                    raw(TerminalText.escapedLines(text)).allSatisfy { $0 == 0x0A },
                    "U+\(String(special.value, radix: 16)) in \(text.unicodeScalars.map(\.value))")
            }
        }
    }

    @Test func aLimitCountsScalarsAndSaysWhenItCut() {
        #expect(TerminalText.escaped("abc", limit: 3) == "abc")
        #expect(TerminalText.escaped("abcd", limit: 3) == "abc…")
        #expect(TerminalText.escaped("\u{1B}\u{1B}\u{1B}", limit: 2) == "\\u{1B}\\u{1B}…")
        #expect(TerminalText.escaped("e\u{301}\u{301}\u{301}x", limit: 2) == "e\u{301}…")
    }

    @Test func linesKeepTheirLineFeedsOnly() {
        #expect(TerminalText.escapedLines("one \u{1B}[31m\ntwo\r\n\u{202E}three") == "one \\u{1B}[31m\ntwo\\r\n\\u{202E}three")
        #expect(TerminalText.escapedLines("plain\nlines\n") == "plain\nlines\n")
    }

    /// `ctl --json`: the same JSON, with the controls JSON encoders keep raw (C1, bidirectional) as `\u` escapes.
    @Test func jsonStaysTheSameJSON() throws {
        let texts = ["\u{600}\u{1B}]0;x\u{7}\u{301}", "\u{9B}31m \u{202E}evil\u{2066} \u{200F}", "plain ✓ \\ \"", "line\nfeed\r\u{0}"]
        let json = String(decoding: try JSONEncoder().encode(texts), as: UTF8.self)
        let escaped = TerminalText.escapedJSON(json)
        #expect(!escaped.unicodeScalars.contains(where: TerminalText.needsEscape), "\(escaped)")
        #expect(escaped.contains(#"\u009b31m \u202eevil\u2066 \u200f"#), "\(escaped)")
        #expect(try JSONDecoder().decode([String].self, from: Data(escaped.utf8)) == texts)
        #expect(TerminalText.escapedJSON(#"{"a":"b"}"#) == #"{"a":"b"}"#)
    }
}
