import Bluetooth

/// A controller of the capturing host, by index, with what the capture told about it: so "local" and
/// "peer" can be told apart.
public struct ControllerInfo: Sendable, Hashable {
    /// The Linux-monitor adapter index; 0 in formats with a single controller.
    public var index: UInt16
    /// From a monitor New Index / Index Info record or a Read BD_ADDR command's completion.
    public var publicAddress: BluetoothAddress?
    /// The last LE Set Random Address command.
    public var randomAddress: BluetoothAddress?
    /// The kernel's name (`hci0`) from a monitor New Index record.
    public var kernelName: String?
    /// From a Read Local Name command's completion.
    public var localName: String?

    public init(index: UInt16) { self.index = index }

    /// Whether `address` is one of this controller's own.
    public func owns(_ address: BluetoothAddress) -> Bool { address == publicAddress || address == randomAddress }
}
