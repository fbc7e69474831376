/// The written forms of values, as regular expressions: each matches exactly what its parser in ``StrictParse``
/// accepts, so the control API's schemas, `profiles/schema.json` and the decoders agree.
public enum Patterns {
    /// Hex bytes: an optional `0x` prefix, then an even number of hex digits; spaces, tabs, `:` and `-` anywhere
    /// between them.
    public static let hex = #"^(0[xX])?[ :\t-]*([0-9A-Fa-f][ :\t-]*[0-9A-Fa-f][ :\t-]*)*$"#
    /// At least one hex byte.
    public static let nonEmptyHex = #"^(0[xX])?[ :\t-]*([0-9A-Fa-f][ :\t-]*[0-9A-Fa-f][ :\t-]*)+$"#
    /// Base64 (RFC 4648 §4 alphabet): whitespace anywhere; padding optional, but when present exactly what the
    /// last group needs.
    public static let base64 =
        #"^[ \t\n\r]*(([A-Za-z0-9+/][ \t\n\r]*){4})*(([A-Za-z0-9+/][ \t\n\r]*){2}(=[ \t\n\r]*=[ \t\n\r]*)?|([A-Za-z0-9+/][ \t\n\r]*){3}(=[ \t\n\r]*)?)?$"#
    /// Base64 of at least one byte: ``base64`` with at least two characters of the alphabet.
    public static let nonEmptyBase64 =
        #"^[ \t\n\r]*((([A-Za-z0-9+/][ \t\n\r]*){4})+(([A-Za-z0-9+/][ \t\n\r]*){2}(=[ \t\n\r]*=[ \t\n\r]*)?|([A-Za-z0-9+/][ \t\n\r]*){3}(=[ \t\n\r]*)?)?|([A-Za-z0-9+/][ \t\n\r]*){2}(=[ \t\n\r]*=[ \t\n\r]*)?|([A-Za-z0-9+/][ \t\n\r]*){3}(=[ \t\n\r]*)?)$"#
    /// A Bluetooth address, `AA:BB:CC:DD:EE:FF` (any case).
    public static let address = #"^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$"#
    /// A passkey: six decimal digits.
    public static let passkey = #"^[0-9]{6}$"#
    /// A fault id: 1–64 letters, digits, `-` and `_`.
    public static let identifier = #"^[A-Za-z0-9_-]{1,64}$"#
    /// A duration as text: milliseconds (`250`, `250ms`, `1.5ms`) or seconds (`5s`, `1.5s`), at most
    /// ``ValueLimits/maximumMilliseconds``.
    public static let duration = #"^([0-9]{1,8}(\.[0-9]{1,3})?(ms)?|[0-9]{1,5}(\.[0-9]{1,3})?s)$"#
    /// An application ATT error code as text, `0x80`…`0x9F`.
    public static let applicationError = #"^0[xX][89][0-9A-Fa-f]$"#
}
