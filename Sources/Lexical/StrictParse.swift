import Bluetooth

/// The parsers of ``Patterns``: each accepts exactly what its pattern matches, nil for anything else.
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

    /// ``Patterns/passkey`` (six decimal digits) → its value.
    public static func passkey(_ text: String) -> UInt32? {
        guard text.utf8.count == 6, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return UInt32(text)
    }

    /// ``Patterns/hex`` → bytes.
    public static func hex(_ text: String) -> [UInt8]? {
        var input = Substring(text).utf8
        if input.count >= 2, input.first == 0x30, input.dropFirst().first.map({ $0 | 0x20 }) == 0x78 { input = input.dropFirst(2) }
        var bytes: [UInt8] = []
        var high: UInt8?
        for byte in input {
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

    /// ``Patterns/base64`` → bytes.
    public static func base64(_ text: String) -> [UInt8]? {
        var sextets: [UInt32] = []
        var padding = 0
        for byte in text.utf8 {
            let value: UInt32
            switch byte {
            case 0x41...0x5A: value = UInt32(byte - 0x41)
            case 0x61...0x7A: value = UInt32(byte - 0x61 + 26)
            case 0x30...0x39: value = UInt32(byte - 0x30 + 52)
            case 0x2B: value = 62
            case 0x2F: value = 63
            case 0x3D:
                padding += 1
                continue
            case 0x20, 0x09, 0x0A, 0x0D: continue
            default: return nil
            }
            guard padding == 0 else { return nil }
            sextets.append(value)
        }
        // A last group of 1 sextet is no byte; padding, when given, completes the last group exactly.
        let rest = sextets.count % 4
        guard rest != 1, padding == 0 || (rest != 0 && rest + padding == 4) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(sextets.count / 4 * 3 + 2)
        var index = 0
        while index < sextets.count {
            let group = sextets[index..<min(index + 4, sextets.count)]
            var word: UInt32 = 0
            for (position, sextet) in group.enumerated() { word |= sextet << (18 - 6 * UInt32(position)) }
            bytes.append(UInt8(truncatingIfNeeded: word >> 16))
            if group.count > 2 { bytes.append(UInt8(truncatingIfNeeded: word >> 8)) }
            if group.count > 3 { bytes.append(UInt8(truncatingIfNeeded: word)) }
            index += 4
        }
        return bytes
    }

    /// ``Patterns/duration`` → milliseconds.
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
        guard (1...maximumDigits).contains(whole.utf8.count), whole.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        var value = Double(Int(whole) ?? 0)
        if parts.count == 2 {
            let fraction = parts[1]
            guard (1...3).contains(fraction.utf8.count), fraction.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            value += Double(Int(fraction) ?? 0) / [10.0, 100.0, 1000.0][fraction.utf8.count - 1]
        }
        let milliseconds = Int((value * scale).rounded())
        return milliseconds <= ValueLimits.maximumMilliseconds ? milliseconds : nil
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

    /// ``Patterns/address`` → the address.
    public static func address(_ text: String) -> BluetoothAddress? { isAddress(text) ? BluetoothAddress(text) : nil }

    /// ``Patterns/identifier``.
    public static func isIdentifier(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.utf8.allSatisfy {
                isHexDigit($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2D || $0 == 0x5F
            }
    }

    /// ``Patterns/applicationError`` → the code.
    public static func applicationError(_ text: String) -> UInt8? {
        let bytes = Array(text.utf8)
        guard bytes.count == 4, bytes[0] == 0x30, bytes[1] | 0x20 == 0x78,
            let code = hex(String(decoding: bytes[2...], as: UTF8.self))?.first,
            (0x80...0x9F).contains(code)
        else { return nil }
        return code
    }
}
