/// Facts of LE credit-based L2CAP channels (Core spec, Vol 3, Part A) that profiles, captures and the kernel agree on.
public enum LECreditBasedChannel {
    /// LE PSMs: 0x0001–0x007F are assigned by the Bluetooth SIG, 0x0080–0x00FF are for anyone.
    public static let psms: ClosedRange<UInt16> = 0x0001...0x00FF
    /// The one bluetoothd listens on (EATT: ATT over credit-based channels).
    public static let eattPSM: UInt16 = 0x0027
    /// An SDU's MTU: at least 23 (a peer refuses less), at most 65,535.
    public static let mtus = 23...65_535

    /// A PSM as logs, reports and profiles write it: `0x0080`.
    public static func text(_ psm: UInt16) -> String { "0x" + Hex.word(psm).uppercased() }
}
