import Bluetooth
import DBus

/// A Bluetooth adapter (`org.bluez.Adapter1`) as read when it was listed.
public struct Adapter: Sendable {
    let stack: BlueZStack
    public let path: DBusObjectPath
    /// `hci0`, `hci1`, …
    public let name: String
    /// ``BluetoothAddress/zero`` when bluetoothd gives none.
    public let address: BluetoothAddress
    public let alias: String
    public let powered: Bool
    /// What its `LEAdvertisingManager1` reports; nil members when it has none.
    public let advertising: AdvertisingCapabilities
    /// Advertising instances still free, when the adapter supports LE advertising.
    public var supportedInstances: Int? { advertising.supportedInstances }
    public var activeInstances: Int? { advertising.activeInstances }
    /// What `Includes` may name (`tx-power`, `appearance`, `local-name`, …).
    public var supportedIncludes: [String] { advertising.supportedIncludes }
    /// True when bluetoothd keeps one AcquireNotify socket per characteristic for all subscribers (BlueZ
    /// before 5.70) rather than one per central. Told by the adapter's properties: `Manufacturer` and
    /// `Version` arrived in 5.72, so 5.70 and 5.71 are taken for older.
    public let sharesNotificationSockets: Bool

    init(stack: BlueZStack, path: DBusObjectPath, adapterProperties: [String: DBusValue], advertisingProperties: [String: DBusValue]?) {
        self.stack = stack
        self.path = path
        name = path.rawValue.split(separator: "/").last.map(String.init) ?? path.rawValue
        address = adapterProperties["Address"]?.string.flatMap(BluetoothAddress.init) ?? .zero
        alias = adapterProperties["Alias"]?.string ?? ""
        powered = adapterProperties["Powered"]?.boolean ?? false
        advertising = AdvertisingCapabilities(advertisingProperties)
        sharesNotificationSockets = adapterProperties["Manufacturer"] == nil
    }

    /// Whether the adapter can advertise (it has `LEAdvertisingManager1`).
    public var canAdvertise: Bool { supportedInstances != nil }

    /// Sets a property of `org.bluez.Adapter1`.
    public func set(_ property: String, _ value: DBusValue) async throws(BlueZError) {
        do {
            _ = try await stack.connection.call(
                destination: BlueZNames.service, path: path, interface: BlueZNames.properties, member: "Set",
                arguments: [.string(BlueZNames.adapter), .string(property), .variant(value)])
        } catch {
            throw .call("cannot set \(property) of \(name)", error)
        }
    }

    /// Reads a property of `org.bluez.Adapter1` now.
    public func get(_ property: String) async throws(BlueZError) -> DBusValue {
        do {
            let reply = try await stack.connection.call(
                destination: BlueZNames.service, path: path, interface: BlueZNames.properties, member: "Get",
                arguments: [.string(BlueZNames.adapter), .string(property)])
            return reply.first?.unwrappingVariants ?? .string("")
        } catch {
            throw .call("cannot read \(property) of \(name)", error)
        }
    }

    public func powerOn() async throws(BlueZError) {
        try await set("Powered", .boolean(true))
    }

    /// Sets the adapter's alias: the GAP Device Name centrals read.
    public func setAlias(_ alias: String) async throws(BlueZError) {
        try await set("Alias", .string(alias))
    }

    /// Asks BlueZ to disconnect the central with `address` from this adapter.
    public func disconnect(central address: BluetoothAddress) async throws(BlueZError) {
        let device = BlueZDevicePath.path(of: address, on: path)
        do {
            _ = try await stack.connection.call(
                destination: BlueZNames.service, path: device, interface: BlueZNames.device, member: "Disconnect", timeout: .seconds(10))
        } catch {
            throw .call("cannot disconnect \(address)", error)
        }
    }
}
