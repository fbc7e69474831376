/// Strings from D-Bus made safe to keep and to print: bounded in bytes, control characters written out.
enum TextSafety {
    /// `text` cut to at most `maximumBytes` UTF-8 bytes, at a character boundary.
    static func bounded(_ text: String, maximumBytes: Int) -> String {
        guard text.utf8.count > maximumBytes else { return text }
        var result = ""
        var used = 0
        for character in text {
            let size = character.utf8.count
            if used + size > maximumBytes { break }
            result.append(character)
            used += size
        }
        return result
    }

    /// `text` for a terminal line: control characters (C0, DEL, C1) as `\u{…}`, at most `limit` characters.
    static func printable(_ text: String, limit: Int = 120) -> String {
        var result = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count == limit { return result + "…" }
            switch scalar.value {
            case 0..<0x20, 0x7F...0x9F: result += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: result.unicodeScalars.append(scalar)
            }
            count += 1
        }
        return result
    }
}
