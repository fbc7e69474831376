import Foundation
import Testing

@testable import Profile

/// The write matchers' regular expressions: the supported syntax, what is refused, the limits, linear-time
/// matching, and agreement with Swift's `Regex` where both are defined.
@Suite struct BytePatternTests {
    func matches(_ pattern: String, _ text: String) throws -> Bool {
        try BytePattern(pattern).matches(Array(text.utf8))
    }

    @Test(
        arguments: [
            // Literals, search anywhere, anchors.
            ("AT", "xxATyy", true), ("^AT", "xAT", false), ("^AT\\+", "AT+X", true), ("K$", "OK", true), ("K$", "OK\n", false),
            ("^$", "", true), ("", "anything", true), ("^a|b$", "xb", true),
            // Escapes.
            ("\\d\\d", "a12", true), ("\\D", "123", false), ("^\\w+$", "ab_9", true), ("\\W", "ab_9", false),
            ("\\s", "a b", true), ("\\S", " \t\n", false), ("\\.", "a", false), ("\\.", ".", true), ("\\x41\\x{42}", "AB", true),
            ("\\u0041\\u{1F600}", "A😀", true), ("\\n\\t\\r", "\n\t\r", true), ("\\e\\a\\f\\0", "\u{1B}\u{07}\u{0C}\u{00}", true),
            ("\\\\", "\\", true), ("\\/", "/", true), ("\\-\\_\\ ", "-_ ", true), ("\\{\\}\\[\\]\\(\\)", "{}[]()", true),
            // Dot: any scalar but line breaks.
            ("a.c", "abc", true), ("a.c", "a\nc", false), ("a.c", "a\rc", false), ("^.$", "é", true), ("^.$", "😀", true),
            // Classes.
            ("[a-c]", "b", true), ("[a-c]", "d", false), ("[^a-c]", "a", false), ("[^a-c]", "\n", true), ("[\\d_]", "_", true),
            ("[\\D]", "5", false), ("[a-]", "-", true), ("[-a]", "-", true), ("[a-c-e]", "-", true), ("[.]", "a", false),
            ("[\\]]", "]", true), ("[\\x41-\\x43]", "B", true), ("[\\b]", "\u{08}", true), ("[é-ë]", "ê", true),
            // Groups, alternation, quantifiers.
            ("^(ab)+$", "ababab", true), ("^(?:ab)+$", "aba", false), ("^(?<x>a|b)c$", "bc", true), ("^(a|b|)c$", "c", true),
            ("^a*$", "", true), ("^a+$", "", false), ("^a?b$", "b", true), ("^a{3}$", "aaa", true), ("^a{3}$", "aaaa", false),
            ("^a{2,}$", "aaaaa", true), ("^a{2,3}$", "aaaa", false), ("^a{,2}$", "aa", true), ("^a{0}$", "", true),
            ("^a*?b+?c??$", "abbc", true), ("^a{1,2}?$", "a", true), ("^(a*)*$", "aaa", true), ("^(a|ab)(c|bcd)(d*)$", "abcd", true),
            // Braces that are not quantifiers are literals, as in Swift; so are lone ] and }.
            ("a{", "a{", true), ("a{x}", "a{x}", true), ("a{,}", "a{,}", true), ("]", "]", true), ("}", "}", true),
            // Unicode scalars, not grapheme clusters or canonical equivalence.
            ("é", "e\u{301}", false), ("e\u{301}", "e\u{301}", true),
        ] as [(String, String, Bool)])
    func supportedSyntax(pattern: String, text: String, expected: Bool) throws {
        #expect(try matches(pattern, text) == expected, "\(pattern) on \(text.debugDescription)")
    }

    @Test(
        arguments: [
            ("([a-z", 1, "'[' is not closed"), ("(ab", 0, "'(' is not closed"), ("ab)", 2, "unmatched ')'"),
            ("*a", 0, "'*' has nothing to repeat"), ("a|+", 2, "'+' has nothing to repeat"),
            ("{2}", 0, "a quantifier has nothing to repeat"),
            ("a**", 2, "a quantifier cannot follow another"), ("a{2}{3}", 4, "a quantifier cannot follow another"),
            ("a*+", 2, "possessive quantifiers are not supported"), ("^*", 1, "an anchor cannot be repeated"),
            ("(a)\\1", 3, "backreferences (\\1) are not supported"), ("\\k<x>", 0, "backreferences (\\k) are not supported"),
            ("a(?=b)", 1, "lookahead \"(?=\" is not supported"), ("(?!b)", 0, "lookahead \"(?!\" is not supported"),
            ("(?<=a)b", 0, "lookbehind \"(?<=\" is not supported"), ("(?<!a)b", 0, "lookbehind \"(?<!\" is not supported"),
            ("(?i)ab", 0, "inline options and other \"(?\" groups are not supported"),
            ("(?>a)", 0, "atomic groups \"(?>\" are not supported"),
            ("\\bword", 0, "word boundaries (\\b) are not supported"), ("\\Aa", 0, "the anchor \\A is not supported"),
            ("\\p{L}", 0, "Unicode properties (\\p{…}) are not supported"), ("a\\v", 1, "\\v is not supported"),
            ("\\i", 0, "unknown escape \\i"), ("ab\\", 2, "the pattern ends with a backslash"),
            ("\\012", 0, "octal escapes are not supported"),
            ("\\x4", 0, "\\x needs 2 hex digits"), ("\\x{}", 0, "expected hex digits and '}' in \\x{…}"),
            ("\\u{D800}", 0, "U+D800 is not a Unicode scalar"), ("[]", 0, "empty character class"), ("[^]a]", 0, "empty character class"),
            ("[z-a]", 2, "the range is reversed (U+7A > U+61)"), ("[\\d-z]", 1, "a range must start with a single character"),
            ("[a-\\d]", 2, "a range must end with a single character"), ("[[:alpha:]]", 1, "nested and POSIX classes are not supported"),
            ("[a&&b]", 2, "class set operations (&&) are not supported"), ("[a--b]", 2, "class set operations (--) are not supported"),
            ("a{3,2}", 1, "repetition {3,2} has its maximum below its minimum"), ("a{1001}", 1, "repetition count 1001 is over 1000"),
            ("a{99999999999999999999}", 1, "repetition count 1000000 is over 1000"),
        ] as [(String, Int, String)])
    func refusedWithOffsetAndMessage(pattern: String, offset: Int, message: String) {
        #expect(throws: BytePatternError.self) { try BytePattern(pattern) }
        do {
            _ = try BytePattern(pattern)
        } catch {
            #expect(error.offset == offset, "\(pattern): \(error)")
            #expect(error.message == message, "\(pattern): \(error)")
        }
    }

    /// A bad pattern is reported at the offending character of the JSON text, escapes counted.
    @Test func profileDiagnosticsPointIntoThePattern() throws {
        let json = #"""
            {"format": 1, "services": [{"id": "s", "uuid": "180f", "characteristics": [{"id": "rx", "uuid": "2a19", "flags": ["write"]}]}],
             "rules": [{"on": {"write": "rx", "regex": "^\\d+\\.(a|b"}, "do": {"succeed": true}}]}
            """#
        let line = try #require(json.split(separator: "\n").last)
        let column = try #require(line.firstIndex(of: "(")).utf16Offset(in: line) + 1
        #expect(
            problems(json) == [
                "test.json:2:\(column) rules[0].on.regex: invalid regular expression: '(' is not closed"
            ])
        let bomb = try loadProfile(json.replacingOccurrences(of: #"^\\d+\\.(a|b"#, with: "^(a+)+$"))
        guard case .write(_, let matcher)? = bomb.rules.first?.trigger else { throw CancellationError() }
        #expect(matcher.regex?.source == "^(a+)+$")
    }

    @Test func sizeLimits() throws {
        // Length.
        _ = try BytePattern(String(repeating: "a", count: BytePattern.maximumSourceLength))
        #expect(throws: BytePatternError.self) { try BytePattern(String(repeating: "a", count: BytePattern.maximumSourceLength + 1)) }
        #expect(throws: BytePatternError.self) { try BytePattern(String(repeating: "a", count: 50_000_000 / 1000)) }
        // Expansion of counted repetitions: each level alone is fine, together they are too large.
        _ = try BytePattern("a{1000}")
        _ = try BytePattern("(ab){900}")
        do {
            _ = try BytePattern("(a{1000}){1000}")
            Issue.record("a million-step program was accepted")
        } catch {
            #expect(error.message.contains("too large once its repetitions are expanded"))
            #expect(error.hint == "use smaller {m,n} counts, or * and +")
        }
        #expect(throws: BytePatternError.self) { try BytePattern("((a{40}){40}){40}") }
        #expect(throws: BytePatternError.self) { try BytePattern("(a|b|c|d){1000}") }
        // Nesting.
        let nested = String(repeating: "(", count: 65) + "a" + String(repeating: ")", count: 65)
        #expect(throws: BytePatternError.self) { try BytePattern(nested) }
        let fine = String(repeating: "(", count: 64) + "a" + String(repeating: ")", count: 64)
        #expect(try BytePattern(fine).matches(Array("a".utf8)))
        #expect(try BytePattern("x{1000}").instructionCount <= BytePattern.maximumInstructions)
    }

    /// A pattern that takes exponential time with backtracking takes linear steps here.
    @Test(arguments: ["^(a+)+$", "^(a|a)*$", "^(a|aa)+$", "(a*)*b", "^(\\w+\\s?)*$", "(.*a){20}", "^(a?){25}a{25}$"])
    func regexBombsTakeLinearSteps(pattern: String) throws {
        let compiled = try BytePattern(pattern)
        for length in [20, 100, 512] {
            let value = Array(String(repeating: "a", count: length).utf8) + Array("!".utf8)
            let (_, steps) = compiled.search(value)
            let bound = (value.count + 1) * 2 * compiled.instructionCount
            #expect(steps <= bound, "\(pattern) on \(length) × a + !: \(steps) steps, bound \(bound)")
        }
        // The review's case: 20 × "a" + "!" against ^(a+)+$.
        if pattern == "^(a+)+$" {
            let (matched, steps) = compiled.search(Array((String(repeating: "a", count: 20) + "!").utf8))
            #expect(!matched)
            #expect(steps < 500, "\(steps) steps")
        }
    }

    @Test func invalidUTF8NeverMatches() throws {
        let anything = try BytePattern("")
        #expect(anything.matches([]))
        #expect(!anything.matches([0xFF]))
        #expect(!anything.matches(Array("ok".utf8) + [0xC3]))  // truncated sequence at the end
        #expect(!(try BytePattern("ok")).matches(Array("ok".utf8) + [0xED, 0xA0, 0x80]))  // an encoded surrogate
        #expect(!(try BytePattern("ok")).matches(Array("ok".utf8) + [0xC0, 0x80]))  // overlong
        // Validity is exactly String(validating:)'s, on random bytes.
        var rng = SeededGenerator(seed: 11)
        for _ in 0..<5000 {
            let bytes = (0..<Int.random(in: 0...6, using: &rng)).map { _ in
                [0x41, 0x80, 0xBF, 0xC2, 0xC0, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF, 0x9F, 0xA0][Int.random(in: 0..<14, using: &rng)]
                    as UInt8
            }
            let valid = bytes.withUnsafeBufferPointer { BytePattern.isValidUTF8($0) }
            #expect(valid == (String(validating: bytes, as: UTF8.self) != nil), "\(bytes)")
        }
    }

    @Test func equalityAndDescriptionAreTheSource() throws {
        #expect(try BytePattern("^a+") == BytePattern("^a+"))
        #expect(try BytePattern("^a+") != BytePattern("^a*"))
        #expect(try BytePattern("^a+").description == "^a+")
        let error = BytePatternError(message: "bad \u{1B}[31m", offset: 3, hint: nil)
        #expect(error.description == "at offset 3: bad \\u{1B}[31m")
    }

    // MARK: Against Swift's Regex

    /// A random pattern in the supported subset, over a small alphabet. Groups are not nested: Swift's
    /// backtracking `Regex` takes minutes on some nested nullable loops, such as
    /// `(ca|(?:-*|(?:\w*?)|(?:b*?|éc\s)*){2,4}?-{0,}){0,}a` (this matcher takes 162 steps on "abc").
    static func randomPattern(_ rng: inout SeededGenerator, depth: Int = 0) -> String {
        var pattern = ""
        for _ in 0..<Int.random(in: 1...3, using: &rng) {
            var atom: String
            var quantifiable = true
            switch Int.random(in: 0..<20, using: &rng) {
            case 0...5: atom = ["a", "b", "c", "é", "-", "_"][Int.random(in: 0..<6, using: &rng)]
            case 6: atom = "."
            case 7:
                atom = ["\\d", "\\w", "\\s", "\\D", "\\W", "\\S", "\\.", "\\x61", "\\n", "\\u{E9}"][Int.random(in: 0..<10, using: &rng)]
            case 8: atom = ["[ab]", "[^a]", "[a-c]", "[^\\d\\s]", "[\\w.]", "[a-]", "[^\\n]", "[é_]"][Int.random(in: 0..<8, using: &rng)]
            case 9...11 where depth == 0:
                let inner = (0..<Int.random(in: 1...3, using: &rng)).map { _ in randomPattern(&rng, depth: depth + 1) }
                atom = (Bool.random(using: &rng) ? "(" : "(?:") + inner.joined(separator: "|") + ")"
            case 12:
                atom = Bool.random(using: &rng) ? "^" : "$"
                quantifiable = false
            default: atom = "a"
            }
            if quantifiable {
                switch Int.random(in: 0..<12, using: &rng) {
                case 0: atom += "*"
                case 1: atom += "+"
                case 2: atom += "?"
                case 3: atom += "{\(Int.random(in: 0...3, using: &rng))}"
                case 4: atom += "{\(Int.random(in: 0...2, using: &rng)),}"
                case 5:
                    let low = Int.random(in: 0...2, using: &rng)
                    atom += "{\(low),\(low + Int.random(in: 0...2, using: &rng))}" + (Bool.random(using: &rng) ? "?" : "")
                case 6: atom += "*?"
                default: break
                }
            }
            pattern += atom
        }
        return pattern
    }

    @Test func agreesWithSwiftRegexOnRandomPatterns() throws {
        var rng = SeededGenerator(seed: 0xB17E)
        let alphabet = ["a", "b", "c", "é", "-", "_", ".", "1", " ", "\n", "\r", "x"]
        var compared = 0
        var matched = 0
        for _ in 0..<1000 {
            let source = Self.randomPattern(&rng)
            let ours = try #require(try? BytePattern(source), "we refuse \(source.debugDescription)")
            guard
                let theirs = try? Regex(source).matchingSemantics(.unicodeScalar)
                    .asciiOnlyDigits().asciiOnlyWhitespace().asciiOnlyWordCharacters()
            else {
                Issue.record("Swift refuses \(source.debugDescription), which we accept")
                continue
            }
            for _ in 0..<12 {
                let text = (0..<Int.random(in: 0...8, using: &rng)).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &rng)] }
                    .joined()
                let expected = text.contains(theirs)
                #expect(ours.matches(Array(text.utf8)) == expected, "\(source.debugDescription) on \(text.debugDescription)")
                compared += 1
                if expected { matched += 1 }
            }
        }
        // Both outcomes are well represented.
        #expect(matched > compared / 5)
        #expect(matched < compared * 4 / 5)
    }
}
