extension Sequence where Element == UInt8 {
    /// Two hex digits per byte (uppercase unless asked otherwise), `separator` between bytes; one pass, no formatting calls.
    @inlinable
    public func hexString(separator: String = "", uppercase: Bool = true) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(underestimatedCount * (2 + separator.utf8.count))
        appendHex(to: &text, separator: separator, uppercase: uppercase)
        return String(decoding: text, as: UTF8.self)
    }

    /// Appends what ``hexString(separator:uppercase:)`` returns, as UTF-8, to `text`.
    @inlinable
    public func appendHex(to text: inout [UInt8], separator: String = "", uppercase: Bool = true) {
        // Contiguous bytes (arrays: every log line) are read in place; other sequences are copied first.
        let appended: Void? = withContiguousStorageIfAvailable { bytes in
            appendHexDigits(of: bytes, to: &text, separator: separator, uppercase: uppercase)
        }
        if appended == nil {
            Array(self).withUnsafeBufferPointer { appendHexDigits(of: $0, to: &text, separator: separator, uppercase: uppercase) }
        }
    }
}

/// Appends the digits and separators of `bytes` to `text`, written in place into one new buffer.
@usableFromInline
func appendHexDigits(of bytes: UnsafeBufferPointer<UInt8>, to text: inout [UInt8], separator: String, uppercase: Bool) {
    guard let input = bytes.baseAddress, !bytes.isEmpty else { return }
    let digits: StaticString = uppercase ? "0123456789ABCDEF" : "0123456789abcdef"
    let separatorBytes = Array(separator.utf8)
    let count = bytes.count * 2 + (bytes.count - 1) * separatorBytes.count
    // Plain pointer loops: generic iteration (enumerated(), ranges, repeatElement) costs a metadata lookup per
    // byte in unoptimized builds, which made hex of a 4 KB value take milliseconds in the tests.
    let hex = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        digits.withUTF8Buffer { digits in
            separatorBytes.withUnsafeBufferPointer { separator in
                guard let digits = digits.baseAddress, var output = buffer.baseAddress else { return }
                let end = input + bytes.count
                var next = input
                while next < end {
                    if next > input, let separatorStart = separator.baseAddress {
                        output.initialize(from: separatorStart, count: separator.count)
                        output += separator.count
                    }
                    output.initialize(to: digits[Int(next.pointee >> 4)])
                    (output + 1).initialize(to: digits[Int(next.pointee & 0x0F)])
                    output += 2
                    next += 1
                }
            }
        }
        initialized = count
    }
    if text.isEmpty { text = hex } else { text += hex }
}

/// Parsing of hex byte strings such as `"51 60 0a"`, `"5160"` or `"51:60"`.
enum HexBytes {
    /// The bytes, or nil when a character is not a hex digit or a separator, or the digit count is odd.
    static func parse(_ text: String) -> [UInt8]? {
        var nibbles: [UInt8] = []
        var characters = Array(text.utf8)
        if characters.count >= 2, characters[0] == UInt8(ascii: "0"), characters[1] | 0x20 == UInt8(ascii: "x") {
            characters.removeFirst(2)
        }
        for byte in characters {
            if let digit = hexDigitValue(byte) {
                nibbles.append(digit)
            } else if byte == 0x20 || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "-") || byte == 0x09 {
                continue
            } else {
                return nil
            }
        }
        guard nibbles.count % 2 == 0 else { return nil }
        return stride(from: 0, to: nibbles.count, by: 2).map { nibbles[$0] << 4 | nibbles[$0 + 1] }
    }
}

/// Base64 decoding without Foundation, strict about the alphabet; padding optional.
enum Base64 {
    static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        var padding = 0
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"):
                guard padding == 0 else { return nil }
                values.append(byte - 65)
            case UInt8(ascii: "a")...UInt8(ascii: "z"):
                guard padding == 0 else { return nil }
                values.append(byte - 97 + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                guard padding == 0 else { return nil }
                values.append(byte - 48 + 52)
            case UInt8(ascii: "+"):
                guard padding == 0 else { return nil }
                values.append(62)
            case UInt8(ascii: "/"):
                guard padding == 0 else { return nil }
                values.append(63)
            case UInt8(ascii: "="): padding += 1
            case 0x20, 0x0A, 0x0D, 0x09: continue
            default: return nil
            }
        }
        guard padding <= 2, (values.count + padding) % 4 == 0 || padding == 0, values.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        var index = 0
        while index + 1 < values.count {
            let chunk = values[index..<min(index + 4, values.count)].map(UInt32.init)
            var word: UInt32 = 0
            for (position, value) in chunk.enumerated() { word |= value << (18 - 6 * UInt32(position)) }
            output.append(UInt8(truncatingIfNeeded: word >> 16))
            if chunk.count > 2 { output.append(UInt8(truncatingIfNeeded: word >> 8)) }
            if chunk.count > 3 { output.append(UInt8(truncatingIfNeeded: word)) }
            index += 4
        }
        return output
    }
}
