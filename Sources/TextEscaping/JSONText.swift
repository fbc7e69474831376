/// JSON text written by hand where a whole encoder would be too slow or too loose (event lines, API bodies).
public enum JSONText {
    /// `text` as a JSON string literal, quotes included, with every character JSON requires escaped.
    public static func quoted(_ text: String) -> String {
        var bytes: [UInt8] = []
        appendQuoted(text, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends ``quoted(_:)`` of `text`, as UTF-8, to `bytes` (the event log writes every line this way).
    public static func appendQuoted(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        // The common case (addresses, ids, details) needs no escaping: one copy, no per-scalar appends.
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            bytes += text.utf8
            bytes.append(UInt8(ascii: "\""))
            return
        }
        // Escaped by scalar: every byte JSON requires escaped is a whole scalar (ASCII), the rest is copied as is.
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes += #"\""#.utf8
            case UInt8(ascii: "\\"): bytes += #"\\"#.utf8
            case UInt8(ascii: "\n"): bytes += #"\n"#.utf8
            case UInt8(ascii: "\r"): bytes += #"\r"#.utf8
            case UInt8(ascii: "\t"): bytes += #"\t"#.utf8
            case 0..<0x20:
                bytes += #"\u00"#.utf8
                bytes.append(hexDigits[Int(byte >> 4)])
                bytes.append(hexDigits[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}
