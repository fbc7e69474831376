import Testing

@testable import Profile

/// Control characters from profiles never reach a terminal raw: every diagnostic line escapes them (``TerminalText``).
@Suite struct DiagnosticEscapingTests {
    @Test func diagnosticsEscapeFilePathMessageAndHint() {
        let diagnostic = Diagnostic(
            file: "evil\u{1B}]0;x\u{07}.json", line: 1, column: 2, path: "variables[\"a\u{1B}[31m\"]",
            message: "unknown \"\u{9B}2J\"", hint: "did you mean \"\u{0}\"?")
        #expect(
            diagnostic.description
                == "evil\\u{1B}]0;x\\u{7}.json:1:2 variables[\"a\\u{1B}[31m\"]: unknown \"\\u{9B}2J\" (did you mean \"\\u{0}\"?)")
        let error = ProfileError(diagnostics: [diagnostic, diagnostic])
        #expect(error.description.split(separator: "\n").count == 2)
        #expect(!error.description.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x9B || $0.value == 0 })
    }

    @Test func keysWithControlCharactersAreReportedEscaped() {
        let found = problems(#"{"format": 1, "variables": {"a\u001b[2Jb": 1}, "x\u0000": 2}"#)
        #expect(
            found == [
                #"test.json:1:29 variables["a\u{1B}[2Jb"]: "a\u{1B}[2Jb" is not a valid name (use letters, digits and '_', starting with a letter)"#,
                #"test.json:1:48 ["x\u{0}"]: unknown key "x\u{0}""#,
            ])
        let syntax = problems("{\"format\": 1, \"\u{1B}\": }")
        #expect(syntax.count == 1)
        #expect(!syntax[0].contains("\u{1B}"))
    }
}
