/// A Bluetooth UUID: 16-, 32- or 128-bit, always kept as its 128 bits (most significant byte first).
///
/// 16- and 32-bit UUIDs are short forms of the Bluetooth base UUID `0000xxxx-0000-1000-8000-00805f9b34fb`;
/// ``description`` is the lower-case 128-bit form profiles and BlueZ use. On the wire UUIDs travel least
/// significant byte first: read them with ``init(littleEndian:)``, write them with ``littleEndian(compact:)``.
public struct BluetoothUUID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The 16 bytes, most significant first.
    public let bytes: [UInt8]

    /// `00000000-0000-1000-8000-00805f9b34fb`: the base every short UUID extends.
    static let base: [UInt8] = [0, 0, 0, 0, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0x80, 0x5f, 0x9b, 0x34, 0xfb]

    /// A SIG-assigned 16-bit UUID.
    public init(_ short: UInt16) {
        var bytes = Self.base
        bytes[2] = UInt8(short >> 8)
        bytes[3] = UInt8(short & 0xFF)
        self.bytes = bytes
    }

    /// A 32-bit UUID.
    public init(uint32 value: UInt32) {
        var bytes = Self.base
        bytes[0] = UInt8(value >> 24)
        bytes[1] = UInt8(value >> 16 & 0xFF)
        bytes[2] = UInt8(value >> 8 & 0xFF)
        bytes[3] = UInt8(value & 0xFF)
        self.bytes = bytes
    }

    private init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    /// 16 bytes, most significant first; nil for any other count.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// 2, 4 or 16 bytes as they travel on the wire (least significant first); nil for any other count.
    public init?<Bytes: Collection>(littleEndian wire: Bytes) where Bytes.Element == UInt8 {
        switch wire.count {
        case 2, 4:
            var bytes = Self.base
            for (index, byte) in wire.reversed().enumerated() { bytes[4 - wire.count + index] = byte }
            self.bytes = bytes
        case 16: bytes = wire.reversed()
        default: return nil
        }
    }

    /// `180f`, `0x180F`, `0000180f`, `0000180f-0000-1000-8000-00805f9b34fb` or the 32 digits without
    /// dashes; nil for anything else.
    public init?(_ text: String) {
        var utf8 = Array(text.utf8)
        if utf8.count > 2, utf8[0] == UInt8(ascii: "0"), utf8[1] | 0x20 == UInt8(ascii: "x") { utf8.removeFirst(2) }
        if utf8.count == 36 {
            guard [8, 13, 18, 23].allSatisfy({ utf8[$0] == UInt8(ascii: "-") }) else { return nil }
            utf8.removeAll { $0 == UInt8(ascii: "-") }
            guard utf8.count == 32 else { return nil }
        }
        guard [4, 8, 32].contains(utf8.count) else { return nil }
        var values: [UInt8] = []
        for index in stride(from: 0, to: utf8.count, by: 2) {
            guard let high = HexDigits.value(utf8[index]), let low = HexDigits.value(utf8[index + 1]) else { return nil }
            values.append(high << 4 | low)
        }
        switch values.count {
        case 2: self.init(UInt16(values[0]) << 8 | UInt16(values[1]))
        case 4: self.init(uint32: values.reduce(0) { $0 << 8 | UInt32($1) })
        default: self.init(unchecked: values)
        }
    }

    /// Whether it is a short form of the base UUID.
    public var isShort: Bool { bytes[4...] == Self.base[4...] }

    /// The 16-bit value, when it is one.
    public var uint16: UInt16? {
        guard isShort, bytes[0] == 0, bytes[1] == 0 else { return nil }
        return UInt16(bytes[2]) << 8 | UInt16(bytes[3])
    }

    /// The 32-bit value, when it is a short form (16-bit ones included).
    public var uint32: UInt32? {
        guard isShort else { return nil }
        return bytes[0..<4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// The wire form, least significant byte first: 2 bytes for a 16-bit UUID when `compact`, else 16
    /// (ATT carries only 2 or 16; advertising data may also use 4, see ``littleEndian32``).
    public func littleEndian(compact: Bool = true) -> [UInt8] {
        if compact, let short = uint16 { return [UInt8(short & 0xFF), UInt8(short >> 8)] }
        return bytes.reversed()
    }

    /// The 4-byte wire form of a 32-bit UUID, when it is one.
    public var littleEndian32: [UInt8]? {
        guard let value = uint32 else { return nil }
        return [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 24)]
    }

    /// Bytes it takes in advertising data: 2, 4 or 16.
    public var advertisedSize: Int { uint16 != nil ? 2 : uint32 != nil ? 4 : 16 }

    /// `0000180f-0000-1000-8000-00805f9b34fb`.
    public var description: String {
        let hex = HexDigits.lowercase(bytes)
        var text = ""
        for (index, character) in hex.enumerated() {
            if [8, 12, 16, 20].contains(index) { text.append("-") }
            text.append(character)
        }
        return text
    }

    /// `180f` for 16-bit UUIDs, `0000180f` style for 32-bit ones, else the 128-bit form.
    public var shortDescription: String {
        if let short = uint16 { return HexDigits.lowercase([UInt8(short >> 8), UInt8(short & 0xFF)]) }
        if uint32 != nil { return HexDigits.lowercase(bytes[0..<4]) }
        return description
    }

    /// The SIG's name for it (`Battery Service`, `Client Characteristic Configuration`), when it is one we know.
    public var name: String? { uint16.flatMap { AssignedNumbers.names[$0] } }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }
}

extension BluetoothUUID {
    public static let primaryService = BluetoothUUID(0x2800)
    public static let secondaryService = BluetoothUUID(0x2801)
    public static let include = BluetoothUUID(0x2802)
    public static let characteristic = BluetoothUUID(0x2803)
    public static let extendedProperties = BluetoothUUID(0x2900)
    public static let userDescription = BluetoothUUID(0x2901)
    public static let clientCharacteristicConfiguration = BluetoothUUID(0x2902)
    public static let serverCharacteristicConfiguration = BluetoothUUID(0x2903)
    public static let presentationFormat = BluetoothUUID(0x2904)
    public static let genericAccess = BluetoothUUID(0x1800)
    public static let genericAttribute = BluetoothUUID(0x1801)
    public static let deviceName = BluetoothUUID(0x2A00)
    public static let appearance = BluetoothUUID(0x2A01)
    public static let serviceChanged = BluetoothUUID(0x2A05)
    /// Apple's L2CAP PSM characteristic: where an accessory publishes the PSM of its LE credit-based channel, for
    /// iOS apps (`CBPeripheral.openL2CAPChannel`) and Android ones (`createInsecureL2capChannel`) to open.
    public static let l2capPSM = BluetoothUUID("ABDD3056-28FA-441D-A470-55A75A52553A")!
}
