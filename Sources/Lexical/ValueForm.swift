import Bluetooth

/// How bytes are written as text in a value object (`{"hex": …}`, `{"utf8": …}`, `{"base64": …}`): the one
/// decoder of a byte value, whether a profile, a fault spec or a control API body writes it.
public enum ValueForm: String, Sendable, CaseIterable {
    /// ``Patterns/hex``: `"51 60 0a"`, `"0x5160"`, `"51:60"`.
    case hex
    /// The text's UTF-8 bytes.
    case utf8
    /// ``Patterns/base64``: `"UWA="`.
    case base64

    /// The bytes `text` stands for; nil when it is not valid for this form.
    public func bytes(_ text: String) -> [UInt8]? {
        switch self {
        case .hex: StrictParse.hex(text)
        case .utf8: Array(text.utf8)
        case .base64: StrictParse.base64(text)
        }
    }

    /// The longest text, in Unicode scalars, a control API body may give in this form.
    public var textLimit: Int {
        switch self {
        case .hex: ValueLimits.hexText
        case .utf8: ATTMTU.maximumValueLength
        case .base64: ValueLimits.base64Text
        }
    }
}
