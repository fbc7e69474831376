extension FixedWidthInteger {
    /// `0x` and at least `digits` upper-case hex digits: `0x004C`, `0xFF`.
    public func hexLiteral(digits: Int) -> String {
        let text = String(self, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: Swift.max(0, digits - text.count)) + text
    }
}

extension String {
    /// Whether two Bluetooth addresses (or other ASCII names) are the same, ignoring case.
    public func equalsIgnoringCase(_ other: String) -> Bool {
        utf8.count == other.utf8.count && uppercased() == other.uppercased()
    }
}
