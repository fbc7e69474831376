/// A device's input/output capability for pairing (SMP IO Capability, Core spec Vol 3 Part H 2.3.2), which
/// decides between just works, passkey entry and numeric comparison.
///
/// Any byte is kept (a capture may carry reserved values); ``name`` is nil for those.
public struct IOCapability: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let displayOnly = IOCapability(rawValue: 0)
    public static let displayYesNo = IOCapability(rawValue: 1)
    public static let keyboardOnly = IOCapability(rawValue: 2)
    public static let noInputNoOutput = IOCapability(rawValue: 3)
    public static let keyboardDisplay = IOCapability(rawValue: 4)

    /// The five defined capabilities, in code order.
    public static let all: [IOCapability] = [.displayOnly, .displayYesNo, .keyboardOnly, .noInputNoOutput, .keyboardDisplay]

    private static let names = ["DisplayOnly", "DisplayYesNo", "KeyboardOnly", "NoInputNoOutput", "KeyboardDisplay"]

    /// `DisplayOnly` … `KeyboardDisplay`: the spec's names, which are also BlueZ's agent capability strings
    /// and the profile's `security.io` values; nil for a reserved value.
    public var name: String? { rawValue < 5 ? Self.names[Int(rawValue)] : nil }

    /// The capability with this ``name``.
    public init?(name: String) {
        guard let index = Self.names.firstIndex(of: name) else { return nil }
        rawValue = UInt8(index)
    }

    /// Whether the device can take a typed passkey.
    public var canType: Bool { self == .keyboardOnly || self == .keyboardDisplay }

    public var description: String { name ?? "IO capability 0x" + HexDigits.pair(rawValue) }
}
