import Foundation
import TextEscaping

/// The `escape` target's checks: whatever scalars surround them, no HTML special character leaves the HTML
/// escapers raw and no terminal control leaves the terminal escaper raw; each escape reads back as the input.
enum EscapeFuzzing {
    static let references = ["&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": "\"", "&#39;": "'"]

    static func run(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)

        // HTML text: no `<`, `>`, `"`, `'`; every `&` starts a reference the escaper writes; unescaping gives the text.
        let html = Array(HTMLText.escaped(text).utf8)
        precondition(!html.contains { "<>\"'".utf8.contains($0) }, "a raw HTML special character in \(html)")
        var unescaped: [UInt8] = []
        var index = 0
        while index < html.count {
            if html[index] == UInt8(ascii: "&") {
                guard let (reference, character) = references.first(where: { html[index...].starts(with: $0.key.utf8) }) else {
                    preconditionFailure("a raw & in \(html)")
                }
                unescaped += character.utf8
                index += reference.utf8.count
            } else {
                unescaped.append(html[index])
                index += 1
            }
        }
        precondition(unescaped == Array(text.utf8), "HTML escaping changed more than the special characters")

        // Script data: no `<`, `>`, `&`, U+2028, U+2029; the JSON parses to the same text.
        guard let json = try? JSONEncoder().encode([text]) else { preconditionFailure("a string does not encode") }
        let script = HTMLText.scriptData(json: String(decoding: json, as: UTF8.self))
        precondition(
            !script.unicodeScalars.contains { ["<", ">", "&", "\u{2028}", "\u{2029}"].contains($0) }, "raw in script data: \(script)")
        precondition((try? JSONDecoder().decode([String].self, from: Data(script.utf8))) == [text], "script data parses to another text")

        // Terminal text: no control or bidirectional scalar; the JSON form parses to the same text.
        precondition(!TerminalText.escaped(text).unicodeScalars.contains(where: TerminalText.needsEscape), "a raw terminal control")
        precondition(
            !TerminalText.escaped(text, limit: 64).unicodeScalars.contains(where: TerminalText.needsEscape), "a raw terminal control")
        precondition(
            TerminalText.escapedLines(text).unicodeScalars.allSatisfy { !TerminalText.needsEscape($0) || $0 == "\n" },
            "a raw terminal control")
        let terminalJSON = TerminalText.escapedJSON(String(decoding: json, as: UTF8.self))
        precondition(!terminalJSON.unicodeScalars.contains(where: TerminalText.needsEscape), "a raw terminal control in JSON")
        precondition(
            (try? JSONDecoder().decode([String].self, from: Data(terminalJSON.utf8))) == [text], "terminal JSON parses to another text")
    }
}
