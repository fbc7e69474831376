/// Hexadecimal text for descriptions.
enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    static func byte(_ value: UInt8) -> String {
        String(decoding: [digits[Int(value >> 4)], digits[Int(value & 0x0F)]], as: UTF8.self)
    }

    static func word(_ value: UInt16) -> String { byte(UInt8(value >> 8)) + byte(UInt8(value & 0xFF)) }

    static func string<Bytes: Sequence>(_ bytes: Bytes, separator: String = "") -> String where Bytes.Element == UInt8 {
        bytes.map(byte).joined(separator: separator)
    }
}
