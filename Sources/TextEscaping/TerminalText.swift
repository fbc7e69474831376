/// Text from profiles, centrals, devices, captures and servers made safe to print on a terminal: the one
/// terminal escaper of `run`'s log, `ctl`, `clone`, `import`, `validate`, `report` and every error message.
///
/// It decides by Unicode scalar, never by `Character`: a combining or prepended scalar next to an ESC does
/// not make a grapheme cluster that slips through.
public enum TerminalText {
    /// `text` with C0 control characters (except tab), DEL, C1 controls and the bidirectional controls written
    /// as escapes (`\n`, `\r`, `\u{1B}`, `\u{202E}`), so that text from a profile or a central cannot move the
    /// cursor, recolour, retitle or reorder a line. Everything else, backslashes included, is unchanged.
    public static func escaped(_ text: String) -> String {
        rewritten(text, keepingLineFeeds: false, escape)
    }

    /// The first `limit` scalars of `text`, escaped as ``escaped(_:)`` does, then `…` when there were more:
    /// for names and messages from a device, which have no business filling a screen.
    public static func escaped(_ text: String, limit: Int) -> String {
        var result = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count == limit { return result + "…" }
            if needsEscape(scalar) { escape(scalar, to: &result) } else { result.unicodeScalars.append(scalar) }
            count += 1
        }
        return result
    }

    /// `text` of several lines, each escaped as ``escaped(_:)`` does, with the line feeds between them kept:
    /// for a whole message printed as it is, such as an error of several lines.
    public static func escapedLines(_ text: String) -> String {
        // By scalar: "\r\n" is one `Character`, which a split at "\n" would not see.
        rewritten(text, keepingLineFeeds: true, escape)
    }

    /// JSON text made safe for a terminal and still the same JSON: each scalar that ``needsEscape(_:)``, but line
    /// feeds, as a `\uXXXX` escape. Encoders keep C1 and bidirectional controls raw (JSON does not require them
    /// escaped); in JSON without whitespace between tokens, as the control API writes it, such scalars occur only
    /// inside strings, where the escape means the same scalar.
    public static func escapedJSON(_ json: String) -> String {
        rewritten(json, keepingLineFeeds: true) { scalar, result in
            let hex = String(scalar.value, radix: 16)
            result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        }
    }

    /// C0 but tab, DEL, C1, the bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069)
    /// and marks (U+061C, U+200E, U+200F).
    public static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09: false
        case 0x00...0x1F, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// False when no UTF-8 byte of `text` can start a scalar that ``needsEscape(_:)``: the common case costs
    /// one pass over the bytes and no copy.
    static func mayNeedEscape(_ text: String) -> Bool {
        text.utf8.contains { $0 < 0x20 || $0 == 0x7F || $0 == 0xC2 || $0 == 0xD8 || $0 == 0xE2 }
            && text.unicodeScalars.contains(where: needsEscape)
    }

    /// `text` with each scalar that ``needsEscape(_:)`` (but line feeds, when `keepingLineFeeds`) written by `write`.
    static func rewritten(_ text: String, keepingLineFeeds: Bool, _ write: (Unicode.Scalar, inout String) -> Void) -> String {
        guard mayNeedEscape(text) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            if needsEscape(scalar), !(keepingLineFeeds && scalar == "\n") {
                write(scalar, &result)
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Writes `scalar` (one that ``needsEscape(_:)``) as `\n`, `\r` or `\u{…}`.
    static func escape(_ scalar: Unicode.Scalar, to result: inout String) {
        switch scalar {
        case "\n": result += "\\n"
        case "\r": result += "\\r"
        default: result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
        }
    }
}
