/// A CBOR data item (RFC 8949), as SMP bodies carry them: maps of text keys to integers, byte strings, text,
/// booleans, arrays and maps.
///
/// Decoding (``init(decoding:)``) takes hostile bytes: every length is checked against the bytes left before
/// anything is allocated, nesting is bounded (``Limits``), text must be UTF-8, and definite and indefinite lengths
/// are both read (clients differ). Encoding writes definite lengths with the shortest heads, as Zephyr's zcbor does.
public indirect enum CBOR: Sendable, Equatable {
    case unsigned(UInt64)
    /// The value −1 − n (CBOR's major type 1).
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    case map([Entry])
    case tagged(UInt64, CBOR)
    case bool(Bool)
    case null
    case undefined
    case float(Double)

    /// One key and its value in a map, in the order they came.
    public struct Entry: Sendable, Equatable {
        public var key: CBOR
        public var value: CBOR

        public init(_ key: CBOR, _ value: CBOR) {
            self.key = key
            self.value = value
        }
    }

    /// Bounds on what one decoded item may hold.
    public enum Limits {
        /// Arrays and maps inside each other at most this deep.
        public static let depth = 16
        /// Items in one body at most (each array element, map key and value counts).
        public static let items = 4096
    }

    /// Why bytes are not one CBOR item.
    public struct DecodingError: Error, Sendable, Equatable, CustomStringConvertible {
        public var offset: Int
        public var reason: String
        public var description: String { "CBOR at byte \(offset): \(reason)" }
    }

    // MARK: Reading values

    /// A map's value for the text key `key` (the first one, when a hostile map repeats it).
    public subscript(key: String) -> CBOR? {
        guard case .map(let entries) = self else { return nil }
        return entries.first { $0.key == .text(key) }?.value
    }

    /// An integer that fits `Int`.
    public var int: Int? {
        switch self {
        case .unsigned(let value): Int(exactly: value)
        case .negative(let value): value < UInt64(Int.max) ? -1 - Int(value) : nil
        default: nil
        }
    }

    public var bytes: [UInt8]? {
        if case .bytes(let value) = self { value } else { nil }
    }

    public var text: String? {
        if case .text(let value) = self { value } else { nil }
    }

    public var bool: Bool? {
        if case .bool(let value) = self { value } else { nil }
    }

    public var array: [CBOR]? {
        if case .array(let value) = self { value } else { nil }
    }

    /// A map with text keys, built in order (for answers).
    public static func map(_ entries: KeyValuePairs<String, CBOR>) -> CBOR {
        .map(entries.map { Entry(.text($0.key), $0.value) })
    }

    /// An integer item.
    public static func int(_ value: Int) -> CBOR {
        value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-(value + 1)))
    }

    // MARK: Encoding

    /// The item's bytes: definite lengths, shortest heads, floats as doubles.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    public func encode(into out: inout [UInt8]) {
        switch self {
        case .unsigned(let value): Self.head(0, value, into: &out)
        case .negative(let value): Self.head(1, value, into: &out)
        case .bytes(let value):
            Self.head(2, UInt64(value.count), into: &out)
            out += value
        case .text(let value):
            let utf8 = Array(value.utf8)
            Self.head(3, UInt64(utf8.count), into: &out)
            out += utf8
        case .array(let items):
            Self.head(4, UInt64(items.count), into: &out)
            for item in items { item.encode(into: &out) }
        case .map(let entries):
            Self.head(5, UInt64(entries.count), into: &out)
            for entry in entries {
                entry.key.encode(into: &out)
                entry.value.encode(into: &out)
            }
        case .tagged(let tag, let item):
            Self.head(6, tag, into: &out)
            item.encode(into: &out)
        case .bool(let value): out.append(value ? 0xF5 : 0xF4)
        case .null: out.append(0xF6)
        case .undefined: out.append(0xF7)
        case .float(let value):
            out.append(0xFB)
            let bits = value.bitPattern
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        }
    }

    private static func head(_ major: UInt8, _ value: UInt64, into out: inout [UInt8]) {
        let type = major << 5
        switch value {
        case 0..<24: out.append(type | UInt8(value))
        case 24...0xFF: out += [type | 24, UInt8(value)]
        case 0x100...0xFFFF: out += [type | 25, UInt8(value >> 8), UInt8(truncatingIfNeeded: value)]
        case 0x1_0000...0xFFFF_FFFF:
            out.append(type | 26)
            for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        default:
            out.append(type | 27)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
    }

    // MARK: Decoding

    /// Decodes exactly one item from `bytes`; bytes after it are an error.
    public init(decoding bytes: [UInt8]) throws(DecodingError) {
        var reader = Reader(bytes: bytes)
        self = try reader.item(depth: 0)
        guard reader.offset == bytes.count else {
            throw DecodingError(offset: reader.offset, reason: "\(bytes.count - reader.offset) bytes after the item")
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0
        var items = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        func failure(_ reason: String, at offset: Int? = nil) -> DecodingError {
            DecodingError(offset: offset ?? self.offset, reason: reason)
        }

        mutating func byte() throws(DecodingError) -> UInt8 {
            guard offset < bytes.count else { throw failure("the data ends inside an item") }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func take(_ count: UInt64) throws(DecodingError) -> ArraySlice<UInt8> {
            guard count <= UInt64(bytes.count - offset) else {
                throw failure("a length of \(count) bytes, but only \(bytes.count - offset) are left")
            }
            defer { offset += Int(count) }
            return bytes[offset..<offset + Int(count)]
        }

        /// The argument of a head with additional information `info`; nil for an indefinite length (31).
        mutating func argument(_ info: UInt8) throws(DecodingError) -> UInt64? {
            switch info {
            case 0..<24: return UInt64(info)
            case 24...27:
                let size = 1 << (info - 24)
                guard size <= bytes.count - offset else { throw failure("the data ends inside an item") }
                var value: UInt64 = 0
                for byte in try take(UInt64(size)) { value = value << 8 | UInt64(byte) }
                return value
            case 31: return nil
            default: throw failure("reserved additional information \(info)", at: offset - 1)
            }
        }

        mutating func count() throws(DecodingError) {
            items += 1
            guard items <= CBOR.Limits.items else { throw failure("more than \(CBOR.Limits.items) items") }
        }

        mutating func item(depth: Int) throws(DecodingError) -> CBOR {
            guard depth <= CBOR.Limits.depth else { throw failure("nested deeper than \(CBOR.Limits.depth)") }
            try count()
            let start = offset
            let initial = try byte()
            let major = initial >> 5
            let info = initial & 0x1F
            if major == 7 { return try simple(info, at: start) }
            let argument = try self.argument(info)
            switch major {
            case 0:
                guard let argument else { throw failure("an integer of indefinite length", at: start) }
                return .unsigned(argument)
            case 1:
                guard let argument else { throw failure("an integer of indefinite length", at: start) }
                return .negative(argument)
            case 2:
                return .bytes(try string(argument, major: 2))
            case 3:
                let raw = try string(argument, major: 3)
                guard let text = String(validating: raw, as: UTF8.self) else { throw failure("text that is not UTF-8", at: start) }
                return .text(text)
            case 4:
                var items: [CBOR] = []
                if let argument {
                    // Each item takes at least one byte: a count beyond the bytes left is refused before it is used.
                    guard argument <= UInt64(bytes.count - offset) else { throw failure("an array of \(argument) items in fewer bytes") }
                    for _ in 0..<argument { items.append(try item(depth: depth + 1)) }
                } else {
                    while try !atBreak() { items.append(try item(depth: depth + 1)) }
                }
                return .array(items)
            case 5:
                var entries: [Entry] = []
                if let argument {
                    guard argument <= UInt64(bytes.count - offset) / 2 else { throw failure("a map of \(argument) entries in fewer bytes") }
                    for _ in 0..<argument { entries.append(Entry(try item(depth: depth + 1), try item(depth: depth + 1))) }
                } else {
                    while try !atBreak() { entries.append(Entry(try item(depth: depth + 1), try item(depth: depth + 1))) }
                }
                return .map(entries)
            case 6:
                guard let argument else { throw failure("a tag of indefinite length", at: start) }
                return .tagged(argument, try item(depth: depth + 1))
            default:
                throw failure("major type \(major)", at: start)
            }
        }

        /// A byte or text string's bytes: definite, or indefinite as definite chunks of the same type up to a break.
        mutating func string(_ length: UInt64?, major: UInt8) throws(DecodingError) -> [UInt8] {
            if let length { return Array(try take(length)) }
            var joined: [UInt8] = []
            while try !atBreak() {
                let start = offset
                let initial = try byte()
                guard initial >> 5 == major, let length = try argument(initial & 0x1F) else {
                    throw failure("a chunk of an indefinite string that is not a definite string of its type", at: start)
                }
                joined += try take(length)
            }
            return joined
        }

        /// Whether the next byte is a break (0xFF), consumed if so.
        mutating func atBreak() throws(DecodingError) -> Bool {
            guard offset < bytes.count else { throw failure("the data ends before a break") }
            guard bytes[offset] == 0xFF else { return false }
            offset += 1
            return true
        }

        mutating func simple(_ info: UInt8, at start: Int) throws(DecodingError) -> CBOR {
            switch info {
            case 20: return .bool(false)
            case 21: return .bool(true)
            case 22: return .null
            case 23: return .undefined
            case 25:
                let raw = try take(2)
                return .float(Double(Float16Bits(UInt16(raw[raw.startIndex]) << 8 | UInt16(raw[raw.startIndex + 1])).value))
            case 26:
                var bits: UInt32 = 0
                for byte in try take(4) { bits = bits << 8 | UInt32(byte) }
                return .float(Double(Float(bitPattern: bits)))
            case 27:
                var bits: UInt64 = 0
                for byte in try take(8) { bits = bits << 8 | UInt64(byte) }
                return .float(Double(bitPattern: bits))
            case 31: throw failure("a break outside an indefinite item", at: start)
            default: throw failure("simple value \(info)", at: start)
            }
        }
    }
}

/// IEEE 754 half precision, decoded by hand (Float16 is not on every Linux target).
private struct Float16Bits {
    let bits: UInt16
    init(_ bits: UInt16) { self.bits = bits }

    var value: Float {
        let sign: Float = bits & 0x8000 == 0 ? 1 : -1
        let exponent = Int((bits >> 10) & 0x1F)
        let fraction = Float(bits & 0x3FF)
        switch exponent {
        case 0: return sign * fraction * Float(sign: .plus, exponent: -24, significand: 1)
        case 31: return fraction == 0 ? sign * .infinity : .nan
        default: return sign * (1 + fraction / 1024) * Float(sign: .plus, exponent: exponent - 15, significand: 1)
        }
    }
}
