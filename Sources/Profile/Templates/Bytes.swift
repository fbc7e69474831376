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
