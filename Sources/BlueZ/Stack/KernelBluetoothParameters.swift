/// The Linux bluetooth module's parameters on this machine (`/sys/module/bluetooth/parameters`): how the kernel
/// that bluetoothd and gattemu's L2CAP sockets share opens channels.
public enum KernelBluetoothParameters {
    /// Where the module's parameters are.
    public static let directory = "/sys/module/bluetooth/parameters"

    /// Whether the kernel opens LE channels that ask for it (bluetoothd's EATT bearers) in enhanced credit-based
    /// mode: `enable_ecred` (on by default from Linux 6.2); nil when it cannot be read.
    public static func enhancedCredits(directory: String = directory) -> Bool? {
        guard let bytes = BluetoothdConfiguration.read(directory + "/enable_ecred") else { return nil }
        let blank: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
        switch String(decoding: bytes.prefix(8).filter { !blank.contains($0) }, as: UTF8.self) {
        case "Y", "1": return true
        case "N", "0": return false
        default: return nil
        }
    }
}
