import Bluetooth

/// The sizes written values are held to, wherever they are written (profiles, fault specs, control API bodies).
///
/// The longest attribute value itself is Bluetooth's: ``ATTMTU/maximumValueLength``.
public enum ValueLimits {
    /// Longest hex text of a value: room for every byte of an attribute with separators, and then some.
    public static let hexText = 4096
    /// Longest base64 text of an attribute value without whitespace: four characters per three bytes.
    public static let base64Text = (ATTMTU.maximumValueLength + 2) / 3 * 4
    /// Longest duration, in milliseconds (about 27.8 hours); ``Patterns/duration`` cannot say more.
    public static let maximumMilliseconds = 100_000_000
}
