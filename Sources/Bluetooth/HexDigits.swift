/// Hexadecimal digits, shared by the types of this module.
enum HexDigits {
    /// The value of one ASCII hex digit, either case; nil for anything else.
    static func value(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static let upper = Array("0123456789ABCDEF".utf8)
    private static let lower = Array("0123456789abcdef".utf8)

    /// Two upper-case digits.
    static func pair(_ byte: UInt8) -> String {
        var text: [UInt8] = []
        appendUppercase(byte, to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Appends ``pair(_:)`` of `byte` as UTF-8.
    static func appendUppercase(_ byte: UInt8, to text: inout [UInt8]) {
        text.append(upper[Int(byte >> 4)])
        text.append(upper[Int(byte & 0x0F)])
    }

    /// Lower-case digits of `bytes`, no separators.
    static func lowercase<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var text: [UInt8] = []
        for byte in bytes {
            text.append(lower[Int(byte >> 4)])
            text.append(lower[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// Lower-case hexadecimal text for descriptions, reports and profiles — the one helper every module uses.
public enum Hex {
    /// Two digits.
    public static func byte(_ value: UInt8) -> String { HexDigits.lowercase(CollectionOfOne(value)) }

    /// Four digits, most significant first.
    public static func word(_ value: UInt16) -> String { HexDigits.lowercase([UInt8(value >> 8), UInt8(value & 0xFF)]) }

    /// The value of one ASCII hex digit, either case; nil for anything else.
    public static func digitValue(_ byte: UInt8) -> UInt8? { HexDigits.value(byte) }

    /// The bytes' digits, `separator` between bytes.
    public static func string<Bytes: Sequence>(_ bytes: Bytes, separator: String = "") -> String where Bytes.Element == UInt8 {
        separator.isEmpty ? HexDigits.lowercase(bytes) : bytes.map(byte).joined(separator: separator)
    }
}
