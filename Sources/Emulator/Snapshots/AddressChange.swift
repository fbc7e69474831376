import Bluetooth

/// Which address the adapter is to show (``Emulator/changeAddress(_:)``).
public enum AddressChoice: Sendable, Equatable {
    /// A new address: resolvable private addresses of a fresh key, which no earlier central can resolve.
    case random
    /// The adapter's own address again.
    case original
}

/// What the adapter shows after ``Emulator/changeAddress(_:)``.
public struct AddressChange: Sendable, Equatable {
    public var adapter: String
    /// The adapter's own (identity) address: bonded centrals learnt it when they paired. Nil when bluetoothd gave
    /// none gattemu can read.
    public var identity: BluetoothAddress?
    /// The identity resolving key the addresses centrals see are made from; nil when the adapter shows its own.
    public var irk: [UInt8]?
    /// How many times gattemu changed the address.
    public var changes: Int
}
