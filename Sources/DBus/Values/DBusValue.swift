/// One D-Bus value of any type; every value knows its own signature.
///
/// Byte arrays (`ay`) are always represented as ``bytes(_:)``; decoding never produces `.array` of bytes.
public indirect enum DBusValue: Sendable, Equatable, Hashable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(DBusObjectPath)
    case signature(DBusSignature)
    case unixFD(DBusFileDescriptor)
    /// `ay`, the common case, kept as bytes.
    case bytes([UInt8])
    /// An array of any other element type; `element` is kept so empty arrays have a signature.
    case array(element: DBusSignature, [DBusValue])
    /// A dictionary `a{kv}`, entries in order.
    case dictionary(key: DBusSignature, value: DBusSignature, [DBusDictionaryEntry])
    case structure([DBusValue])
    case variant(DBusValue)

    /// The complete type signature of this value.
    public var signature: DBusSignature {
        switch self {
        case .byte: .byte
        case .boolean: .boolean
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        case .int64: .int64
        case .uint64: .uint64
        case .double: .double
        case .string: .string
        case .objectPath: .objectPath
        case .signature: .signature
        case .unixFD: .unixFD
        case .bytes: .bytes
        case .array(let element, _): .array(of: element)
        case .dictionary(let key, let value, _): .dictionary(key: key, value: value)
        case .structure(let fields): DBusSignature("(" + fields.map(\.signature.rawValue).joined() + ")")
        case .variant: .variant
        }
    }
}

/// One entry of a D-Bus dictionary.
public struct DBusDictionaryEntry: Sendable, Equatable, Hashable {
    public var key: DBusValue
    public var value: DBusValue

    public init(key: DBusValue, value: DBusValue) {
        self.key = key
        self.value = value
    }
}
