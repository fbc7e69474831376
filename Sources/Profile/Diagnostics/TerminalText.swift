/// Profile text made safe to print on a terminal.
public enum TerminalText {
    /// `text` with C0 control characters (except tab), DEL, C1 controls and the bidirectional overrides written
    /// as escapes (`\n`, `\r`, `\u{1B}`, `\u{202E}`), so that text from a profile or a central cannot move the
    /// cursor, recolour or reorder a line. Everything else, backslashes included, is unchanged.
    public static func escaped(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == 0xC2 || $0 == 0xE2 }),
            text.unicodeScalars.contains(where: needsEscape)
        else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            default: result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            }
        }
        return result
    }

    /// C0 but tab, DEL, C1, and U+202A–U+202E, U+2066–U+2069 (embeddings, overrides and isolates).
    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09: false
        case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
