import Bluetooth

/// Reads fields front to back from a slice, every read bounds-checked: a read past the end returns nil and
/// leaves the cursor where it was.
struct ByteCursor {
    let bytes: ArraySlice<UInt8>
    private(set) var index: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        index = bytes.startIndex
    }

    var remaining: Int { bytes.endIndex - index }
    var isAtEnd: Bool { index >= bytes.endIndex }
    /// Bytes read so far.
    var consumed: Int { index - bytes.startIndex }

    mutating func u8() -> UInt8? {
        guard index < bytes.endIndex else { return nil }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func i8() -> Int8? { u8().map { Int8(bitPattern: $0) } }

    mutating func u16le() -> UInt16? {
        guard remaining >= 2 else { return nil }
        defer { index += 2 }
        return UInt16(bytes[index]) | UInt16(bytes[index + 1]) << 8
    }

    /// An ATT attribute handle, little-endian as ATT carries it.
    mutating func attributeHandle() -> AttributeHandle? { u16le().map(AttributeHandle.init(rawValue:)) }

    mutating func u16be() -> UInt16? {
        guard remaining >= 2 else { return nil }
        defer { index += 2 }
        return UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1])
    }

    mutating func u32(bigEndian: Bool) -> UInt32? {
        guard remaining >= 4 else { return nil }
        defer { index += 4 }
        let b0 = UInt32(bytes[index])
        let b1 = UInt32(bytes[index + 1])
        let b2 = UInt32(bytes[index + 2])
        let b3 = UInt32(bytes[index + 3])
        return bigEndian ? b0 << 24 | b1 << 16 | b2 << 8 | b3 : b3 << 24 | b2 << 16 | b1 << 8 | b0
    }

    mutating func u64(bigEndian: Bool) -> UInt64? {
        guard remaining >= 8, let first = u32(bigEndian: bigEndian), let second = u32(bigEndian: bigEndian) else { return nil }
        return bigEndian ? UInt64(first) << 32 | UInt64(second) : UInt64(second) << 32 | UInt64(first)
    }

    /// The next `count` bytes.
    mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, remaining >= count else { return nil }
        defer { index += count }
        return bytes[index..<(index + count)]
    }

    /// Everything left.
    mutating func rest() -> ArraySlice<UInt8> {
        defer { index = bytes.endIndex }
        return bytes[index...]
    }

    mutating func skip(_ count: Int) -> Bool {
        guard count >= 0, remaining >= count else { return false }
        index += count
        return true
    }

    /// A six-byte address, least significant byte first as HCI carries it.
    mutating func address() -> BluetoothAddress? {
        guard let wire = take(6) else { return nil }
        return BluetoothAddress(littleEndian: wire)
    }
}
