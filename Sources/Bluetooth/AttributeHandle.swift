/// An ATT attribute handle (Core spec Vol 3 Part F 3.2.2): the number that names one attribute of a server's table,
/// 0x0001…0xFFFF.
///
/// 0x0000 is reserved and names no attribute, yet PDUs carry it (an Error Response to a request that has no handle), so
/// this type holds it rather than refusing it: check for it where a real attribute is meant.
public struct AttributeHandle: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(integerLiteral value: UInt16) { rawValue = value }

    /// The handle after this one; nil after 0xFFFF, the last.
    public var next: AttributeHandle? { rawValue < .max ? AttributeHandle(rawValue: rawValue + 1) : nil }

    /// `0x` and four lower-case digits (``Hex/word(_:)``), as reports and notes write handles: `0x002a`.
    public var description: String { "0x" + Hex.word(rawValue) }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
