/// Strings from D-Bus made safe to keep: bounded in bytes (printing them escapes them: ``TerminalText``).
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
}
