/// JSON text written by hand where a whole encoder would be too slow or too loose (event lines, API bodies).
public enum JSONText {
    /// `text` as a JSON string literal, quotes included, with every character JSON requires escaped.
    public static func quoted(_ text: String) -> String {
        // The common case (addresses, ids, details) needs no escaping: one copy, no per-scalar appends.
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            return "\"" + text + "\""
        }
        var result = "\""
        result.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                let digits = Array("0123456789abcdef")
                result += "\\u00" + String(digits[Int(scalar.value >> 4)]) + String(digits[Int(scalar.value & 0xF)])
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
