/// Bluetooth UUID normalisation.
public enum BluetoothUUID {
    static let baseSuffix = "-0000-1000-8000-00805f9b34fb"

    /// The lowercase 128-bit form of a 16-bit (`"180f"`, `"0x180F"`), 32-bit or 128-bit UUID
    /// (with or without dashes); nil if the text is none of these.
    public static func normalize(_ text: String) -> String? {
        var hex = text.lowercased()
        if hex.hasPrefix("0x") { hex.removeFirst(2) }
        let isHex = { (s: Substring) in !s.isEmpty && s.allSatisfy { $0.isHexDigit && $0.isASCII } }
        switch hex.count {
        case 4 where isHex(hex[...]): return "0000" + hex + baseSuffix
        case 8 where isHex(hex[...]): return hex + baseSuffix
        case 32 where isHex(hex[...]):
            let c = Array(hex)
            return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-"
                + String(c[16..<20]) + "-" + String(c[20..<32])
        case 36:
            let groups = hex.split(separator: "-", omittingEmptySubsequences: false)
            guard groups.map(\.count) == [8, 4, 4, 4, 12], groups.allSatisfy(isHex) else { return nil }
            return hex
        default: return nil
        }
    }
}
