/// A characteristic as its profile names it (`"lock-state"`): the key every layer files a characteristic under —
/// rules, the engine, the exported GATT objects, faults, the central registry, delivery and the relay.
///
/// Its own type so that a characteristic id cannot be mixed up with a service id, a descriptor id, a D-Bus path or
/// a value; the control API and the event log carry its text (``rawValue``).
public struct CharacteristicID: Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The id as the profile writes it.
    public var rawValue: String

    /// The id `rawValue` (not checked: the profile decoder checks ids where they are declared).
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// An id written in code, as `"rx"`.
    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    /// ``rawValue``.
    public var description: String { rawValue }

    /// Ordered by their text, as listings show them.
    public static func < (lhs: CharacteristicID, rhs: CharacteristicID) -> Bool { lhs.rawValue < rhs.rawValue }
}
