/// A 48-bit Bluetooth device address (`BD_ADDR`), kept in display order (`AA:BB:CC:DD:EE:FF` → `[0xAA, …]`).
///
/// On the wire (HCI, L2CAP, ATT) addresses travel least significant byte first: build from those bytes
/// with ``init(littleEndian:)``.
public struct BluetoothAddress: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The six bytes, most significant first.
    public let bytes: [UInt8]

    /// `00:00:00:00:00:00`, which stands for "no device" (and which a controller never uses).
    public static let zero = BluetoothAddress(unchecked: [0, 0, 0, 0, 0, 0])

    private init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    /// Six bytes, most significant first; nil for any other count.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 6 else { return nil }
        self.bytes = bytes
    }

    /// Six bytes as they appear on the wire (least significant first); nil for any other count.
    public init?<Bytes: Collection>(littleEndian wire: Bytes) where Bytes.Element == UInt8 {
        guard wire.count == 6 else { return nil }
        bytes = wire.reversed()
    }

    /// `AA:BB:CC:DD:EE:FF`, `aa-bb-cc-dd-ee-ff` or `AABBCCDDEEFF`; nil for anything else.
    public init?(_ text: String) {
        let digits = Array(text.utf8).filter { $0 != UInt8(ascii: ":") && $0 != UInt8(ascii: "-") }
        let separators = text.utf8.count - digits.count
        guard digits.count == 12, separators == 0 || separators == 5 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(6)
        for index in stride(from: 0, to: 12, by: 2) {
            guard let high = HexDigits.value(digits[index]), let low = HexDigits.value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        if separators == 5 {
            // Separators only between byte pairs.
            let scalars = Array(text.utf8)
            guard stride(from: 2, to: 17, by: 3).allSatisfy({ scalars[$0] == UInt8(ascii: ":") || scalars[$0] == UInt8(ascii: "-") }) else {
                return nil
            }
        }
        self.bytes = bytes
    }

    /// Six pairs of hex digits, each but the last followed by `separator` (`AA_BB_CC_DD_EE_FF` in BlueZ's
    /// object paths), as UTF-8; nil for anything else.
    public init?<Text: Collection>(utf8 text: Text, separator: UInt8) where Text.Element == UInt8 {
        guard text.count == 17 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(6)
        var index = text.startIndex
        for pair in 0..<6 {
            guard let high = HexDigits.value(text[index]) else { return nil }
            index = text.index(after: index)
            guard let low = HexDigits.value(text[index]) else { return nil }
            index = text.index(after: index)
            bytes.append(high << 4 | low)
            if pair < 5 {
                guard text[index] == separator else { return nil }
                index = text.index(after: index)
            }
        }
        self.bytes = bytes
    }

    /// The bytes least significant first, as HCI and ATT carry them.
    public var littleEndian: [UInt8] { bytes.reversed() }

    /// `AA:BB:CC:DD:EE:FF`.
    public var description: String {
        var text: [UInt8] = []
        appendDescription(to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Appends ``description`` as UTF-8 to `text` (the event log names a central on every line).
    public func appendDescription(to text: inout [UInt8]) {
        for (index, byte) in bytes.enumerated() {
            if index > 0 { text.append(UInt8(ascii: ":")) }
            HexDigits.appendUppercase(byte, to: &text)
        }
    }

    /// `AABBCCDDEEFF` (what the Noke name embeds).
    public var compact: String { bytes.map(HexDigits.pair).joined() }

    /// The kind of random address, told by its two most significant bits; meaningful only for
    /// addresses of type ``AddressType/random``.
    public var randomKind: RandomAddressKind {
        switch bytes[0] >> 6 {
        case 0b11: .staticAddress
        case 0b01: .resolvablePrivate
        case 0b00: .nonResolvablePrivate
        default: .reserved
        }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }
}

/// Whether an LE address is the controller's public one or a random one (HCI's address type).
public enum AddressType: UInt8, Sendable, Hashable, CustomStringConvertible {
    case `public` = 0x00
    case random = 0x01
    /// Resolved from a resolvable private address, public identity (HCI 0x02).
    case publicIdentity = 0x02
    /// Resolved from a resolvable private address, random static identity (HCI 0x03).
    case randomIdentity = 0x03

    public var description: String {
        switch self {
        case .public: "public"
        case .random: "random"
        case .publicIdentity: "public (resolved)"
        case .randomIdentity: "random (resolved)"
        }
    }

    /// Whether the address is a random one, resolved or not.
    public var isRandom: Bool { self == .random || self == .randomIdentity }
}

/// The sub-types of LE random addresses.
public enum RandomAddressKind: Sendable, Hashable {
    case staticAddress, resolvablePrivate, nonResolvablePrivate, reserved
}

/// The transport of a link.
public enum LinkType: String, Sendable, Hashable {
    /// Bluetooth Low Energy.
    case le = "LE"
    /// Bluetooth Classic.
    case bredr = "BR/EDR"
}
