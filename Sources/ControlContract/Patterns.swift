/// Regular expressions of the contract, each matching exactly what the server's decoders accept.
public enum Patterns {
    /// Hex bytes: an even number of hex digits; spaces, tabs, `:` and `-` anywhere between them.
    public static let hex = #"^[ :\t-]*([0-9A-Fa-f][ :\t-]*[0-9A-Fa-f][ :\t-]*)*$"#
    /// At least one hex byte.
    public static let nonEmptyHex = #"^[ :\t-]*([0-9A-Fa-f][ :\t-]*[0-9A-Fa-f][ :\t-]*)+$"#
    /// Standard base64 with padding (RFC 4648 §4), no whitespace.
    public static let base64 = #"^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"#
    /// A Bluetooth address, `AA:BB:CC:DD:EE:FF` (any case).
    public static let address = #"^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$"#
    /// A passkey: six decimal digits.
    public static let passkey = #"^[0-9]{6}$"#
    /// A fault id: 1–64 letters, digits, `-` and `_`.
    public static let identifier = #"^[A-Za-z0-9_-]{1,64}$"#
    /// A duration as text: milliseconds (`250`, `250ms`, `1.5ms`) or seconds (`5s`, `1.5s`), at most 100,000,000 ms.
    public static let duration = #"^([0-9]{1,8}(\.[0-9]{1,3})?(ms)?|[0-9]{1,5}(\.[0-9]{1,3})?s)$"#
    /// An application ATT error code as text, `0x80`…`0x9F`.
    public static let applicationError = #"^0[xX][89][0-9A-Fa-f]$"#

    /// The largest duration, in milliseconds (about 27.8 hours).
    public static let maximumMilliseconds = 100_000_000
}

/// Strict parsers for the patterns above (shared by the server's decoders and the profile format).
public enum StrictParse {
    static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }

    static func hexValue(_ byte: UInt8) -> UInt8 {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        default: byte - 0x61 + 10
        }
    }

    /// ``Patterns/passkey`` (six decimal digits) → its value; nil when `text` does not match.
    public static func passkey(_ text: String) -> UInt32? {
        guard text.utf8.count == 6, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return UInt32(text)
    }

    /// ``Patterns/hex`` → bytes; nil when `text` does not match.
    public static func hex(_ text: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        var high: UInt8?
        for byte in text.utf8 {
            if byte == 0x20 || byte == 0x3A || byte == 0x09 || byte == 0x2D { continue }
            guard isHexDigit(byte) else { return nil }
            if let first = high {
                bytes.append(first << 4 | hexValue(byte))
                high = nil
            } else {
                high = hexValue(byte)
            }
        }
        return high == nil ? bytes : nil
    }

    /// ``Patterns/base64`` → bytes; nil when `text` does not match.
    public static func base64(_ text: String) -> [UInt8]? {
        let input = Array(text.utf8)
        guard input.count % 4 == 0 else { return nil }
        func value(_ byte: UInt8) -> UInt32? {
            switch byte {
            case 0x41...0x5A: UInt32(byte - 0x41)
            case 0x61...0x7A: UInt32(byte - 0x61 + 26)
            case 0x30...0x39: UInt32(byte - 0x30 + 52)
            case 0x2B: 62
            case 0x2F: 63
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(input.count / 4 * 3)
        var index = 0
        while index < input.count {
            let isLast = index + 4 == input.count
            let padding = isLast ? (input[index + 3] == 0x3D ? (input[index + 2] == 0x3D ? 2 : 1) : 0) : 0
            var group: UInt32 = 0
            for offset in 0..<4 {
                let byte = input[index + offset]
                if offset >= 4 - padding {
                    group <<= 6
                    continue
                }
                guard let sextet = value(byte) else { return nil }
                group = group << 6 | sextet
            }
            bytes.append(UInt8(group >> 16 & 0xFF))
            if padding < 2 { bytes.append(UInt8(group >> 8 & 0xFF)) }
            if padding < 1 { bytes.append(UInt8(group & 0xFF)) }
            index += 4
        }
        return bytes
    }

    /// ``Patterns/duration`` → milliseconds; nil when `text` does not match.
    public static func milliseconds(_ text: String) -> Int? {
        var rest = Substring(text)
        var scale = 1.0
        var maximumDigits = 8
        if rest.hasSuffix("ms") {
            rest = rest.dropLast(2)
        } else if rest.hasSuffix("s") {
            rest = rest.dropLast(1)
            scale = 1000
            maximumDigits = 5
        }
        let parts = rest.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        guard (1...maximumDigits).contains(whole.count), whole.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        var value = Double(Int(whole) ?? 0)
        if parts.count == 2 {
            let fraction = parts[1]
            guard (1...3).contains(fraction.count), fraction.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            value += Double(Int(fraction) ?? 0) / [10.0, 100.0, 1000.0][fraction.count - 1]
        }
        let milliseconds = Int((value * scale).rounded())
        return milliseconds <= Patterns.maximumMilliseconds ? milliseconds : nil
    }

    /// ``Patterns/address``.
    public static func isAddress(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 17 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index % 3 == 2 { if byte != 0x3A { return false } } else if !isHexDigit(byte) { return false }
        }
        return true
    }

    /// ``Patterns/identifier``.
    public static func isIdentifier(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.utf8.allSatisfy {
                isHexDigit($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2D || $0 == 0x5F
            }
    }
}
