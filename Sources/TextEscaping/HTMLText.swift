/// Text made safe inside HTML: the one HTML escaper of `gattemu report` and anything else that writes HTML.
///
/// It works on UTF-8 bytes. Every character HTML treats specially is ASCII, and in UTF-8 an ASCII byte is
/// always that character, whatever surrounds it: a combining or prepended scalar next to `<` (one Swift
/// `Character`, such as `"\u{600}<"`) cannot hide it.
public enum HTMLText {
    /// `text` for an element's content or a quoted attribute value: `&`, `<`, `>`, `"` and `'` as the
    /// character references `&amp;`, `&lt;`, `&gt;`, `&quot;` and `&#39;`; everything else unchanged.
    public static func escaped(_ text: String) -> String {
        guard text.utf8.contains(where: { reference(for: $0) != nil }) else { return text }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 32)
        for byte in text.utf8 {
            if let reference = reference(for: byte) { bytes += reference.utf8 } else { bytes.append(byte) }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// JSON text (as an encoder writes it) made safe as the content of a `<script>` element: `<`, `>`, `&`,
    /// U+2028 and U+2029 as `\u003c`, `\u003e`, `\u0026`, `\u2028` and `\u2029`. In JSON text they can only occur
    /// inside strings, where the escape means the same, so the data parses to the same value and cannot end
    /// its element (`</script>`), open a comment (`<!--`) or end a line of a script.
    public static func scriptData(json: String) -> String {
        let source = Array(json.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(source.count + 32)
        var index = 0
        while index < source.count {
            let byte = source[index]
            switch byte {
            case UInt8(ascii: "<"): bytes += #"\u003c"#.utf8
            case UInt8(ascii: ">"): bytes += #"\u003e"#.utf8
            case UInt8(ascii: "&"): bytes += #"\u0026"#.utf8
            // U+2028 and U+2029 are E2 80 A8 and E2 80 A9.
            case 0xE2
            where index + 2 < source.count && source[index + 1] == 0x80 && (source[index + 2] == 0xA8 || source[index + 2] == 0xA9):
                bytes += (source[index + 2] == 0xA8 ? #"\u2028"# : #"\u2029"#).utf8
                index += 2
            default: bytes.append(byte)
            }
            index += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The character reference that stands for `byte` in HTML text, or nil when it stands for itself.
    static func reference(for byte: UInt8) -> String? {
        switch byte {
        case UInt8(ascii: "&"): "&amp;"
        case UInt8(ascii: "<"): "&lt;"
        case UInt8(ascii: ">"): "&gt;"
        case UInt8(ascii: "\""): "&quot;"
        case UInt8(ascii: "'"): "&#39;"
        default: nil
        }
    }
}
