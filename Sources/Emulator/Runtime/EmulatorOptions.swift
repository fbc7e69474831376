import BlueZ

/// How `gattemu run` runs a profile.
public struct EmulatorOptions: Sendable {
    /// `hciN` or an address; nil picks the first adapter.
    public var adapter: String?
    public var notifyPath: GattNotifyPath = .acquireNotify
    /// Seed for random values; the same seed and events replay the same bytes.
    public var seed: UInt64 = 0
    public var bus: DBusBusChoice = .system
    /// Exit when bluetoothd goes away instead of waiting for it and registering again.
    public var exitOnLoss = false

    public init(adapter: String? = nil) { self.adapter = adapter }
}

/// The bus gattemu talks to BlueZ on (the system bus, or a test bus).
public enum DBusBusChoice: Sendable {
    case system
    case address(String)
}
