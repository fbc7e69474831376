import BlueZ
import Bluetooth

/// The real device behind `gattemu relay`: the emulator forwards what a central does to it instead of answering
/// from the profile's rules, and passes on its answers and ATT errors (faults act on both sides as on an emulated
/// device). Attach with ``Emulator/relay(to:)`` before ``Emulator/start()``.
///
/// The device's notifications come back through ``Emulator/relayNotification(_:value:indicate:)``, its link's
/// state through ``Emulator/deviceLost(_:)`` and ``Emulator/deviceBack()``.
public protocol RelayUpstream: AnyObject, Sendable {
    /// Reads the device's characteristic or descriptor from `offset`.
    func read(_ attribute: GattAttributeID, offset: Int) async throws(ATTError) -> [UInt8]
    /// Writes `value` at `offset`; `withResponse` false for a Write Command.
    func write(_ attribute: GattAttributeID, value: [UInt8], offset: Int, withResponse: Bool) async throws(ATTError)
    /// Subscribes to the device's characteristic (the first central subscribed) or unsubscribes (the last one left).
    func setSubscribed(_ characteristic: String, _ subscribed: Bool) async throws(ATTError)
    /// A central connected to or disconnected from the mirror.
    func central(_ central: BluetoothAddress, connected: Bool) async
}
