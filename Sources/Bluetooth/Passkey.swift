/// SMP passkeys (Core spec Vol 3 Part H 2.3.5.3): 0…999999, shown and typed as six decimal digits.
public enum Passkey {
    public static let range: ClosedRange<UInt32> = 0...999_999

    /// Six digits, leading zeros kept (`000042`), as a phone shows it; values past the range wrap.
    public static func digits(_ passkey: UInt32) -> String {
        let text = String(passkey % (range.upperBound + 1))
        return String(repeating: "0", count: max(0, 6 - text.count)) + text
    }
}
