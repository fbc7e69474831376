extension Array where Element == UInt8 {
    /// Appends `value` most significant byte first.
    public mutating func appendBE16(_ value: UInt16) { append(contentsOf: [UInt8(value >> 8), UInt8(value & 0xFF)]) }
    /// Appends `value` least significant byte first (HCI, L2CAP and ATT fields).
    public mutating func appendLE16(_ value: UInt16) { append(contentsOf: [UInt8(value & 0xFF), UInt8(value >> 8)]) }
    public mutating func appendBE32(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { append(UInt8((value >> UInt32(shift)) & 0xFF)) }
    }
    public mutating func appendLE32(_ value: UInt32) {
        for shift in stride(from: 0, through: 24, by: 8) { append(UInt8((value >> UInt32(shift)) & 0xFF)) }
    }
    public mutating func appendBE64(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { append(UInt8((value >> UInt64(shift)) & 0xFF)) }
    }
    public mutating func appendLE64(_ value: UInt64) {
        for shift in stride(from: 0, through: 56, by: 8) { append(UInt8((value >> UInt64(shift)) & 0xFF)) }
    }
}
