import Bluetooth
import DBus

/// What a central saw of one device, as raw observations: the advertisement (Device1's properties during the
/// scan), the GATT table, each read, each subscription and each notification, with times since connecting.
/// ``DeviceRecorder`` makes it; turning it into a replica of the device is left to the caller.
public struct CentralRecording: Sendable {
    /// The adapter the device was recorded with (`hci1`) and its address.
    public var adapterName: String
    public var adapterAddress: BluetoothAddress?
    /// The device as found by the scan, before connecting (its advertisement and scan response, merged).
    public var advertisement: DeviceProperties
    /// The device's properties once its services were resolved (BlueZ may have read its GAP name).
    public var connectedProperties: DeviceProperties?
    /// Which connection attempt succeeded.
    public var connectAttempt = 1
    public var table = RemoteGattTable()
    public var reads: [Read] = []
    public var subscriptions: [NotificationListener.Subscription] = []
    public var notifications: [NotificationListener.Received] = []
    /// Notifications that arrived past the listener's limit.
    public var droppedNotifications = 0
    /// How long the notifications were listened to (zero: not subscribed).
    public var listened: Duration = .zero
    /// When the connection was made (the time base of everything below).
    public var connectedAt: ContinuousClock.Instant = .now
    /// When it ended, and whether the device ended it.
    public var disconnectedAt: ContinuousClock.Instant?
    public var deviceDisconnected = false
    public var pairedBefore = false
    /// Whether BlueZ paired with the device during the recording.
    public var pairedDuring = false
    /// What was ignored, cut or worked around, one line each.
    public var notes: [String] = []

    /// A read of a characteristic or descriptor.
    public struct Read: Sendable, Equatable {
        public enum Target: Sendable, Equatable { case characteristic, descriptor }
        public var target: Target
        public var read: RemoteRead
    }

    public init(adapterName: String, adapterAddress: BluetoothAddress?, advertisement: DeviceProperties) {
        self.adapterName = adapterName
        self.adapterAddress = adapterAddress
        self.advertisement = advertisement
    }

    /// Time since the connection was made.
    public func offset(of instant: ContinuousClock.Instant) -> Duration { instant - connectedAt }
}
