import Bluetooth

/// The bounds a profile and its behaviour are held to, whatever the profile says (profiles/README.md, "Limits").
///
/// Literal values beyond them are validation errors; values computed at run time are cut or clamped to them,
/// with a `.log` effect saying so.
public enum ProfileLimits {
    /// Longest attribute value (BlueZ's and ATT's maximum); a characteristic's `maxLength` may only lower it.
    public static let attributeValueLength = ATTMTU.maximumValueLength
    /// Longest variable or state value (bytes, or UTF-8 of a string), and longest value a template may build
    /// along the way (every intermediate and the rendered result).
    public static let valueLength = 4096
    /// Longest template text, in UTF-8 bytes.
    public static let templateLength = 8192
    /// Shortest timer period (`every`) and one-shot timer delay (`after`), in milliseconds.
    public static let minimumTimerMilliseconds = 10
    /// Longest `delay`, `after` or `every`: 24 hours, in milliseconds.
    public static let maximumDurationMilliseconds = 86_400_000
    /// Largest profile file (and `extends` base) read, in bytes.
    public static let fileSize = 16 << 20
}
