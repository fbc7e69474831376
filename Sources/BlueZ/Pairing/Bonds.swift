import Bluetooth
import DBus

/// A central bluetoothd knows on an adapter with keys from pairing (`Device1.Paired`), as read now.
public struct PairedCentral: Sendable, Equatable {
    public var address: BluetoothAddress
    /// Its keys are stored and outlive a restart of bluetoothd (`Device1.Bonded`; BlueZ before 5.64 has no
    /// such property, and then paired is taken for bonded).
    public var bonded: Bool
    public var connected: Bool
    /// `public` or `random` (BlueZ names no other).
    public var addressType: AddressType
}

extension Adapter {
    /// The centrals paired with this adapter, by address.
    public func pairedCentrals() async throws(BlueZError) -> [PairedCentral] {
        try await stack.managedObjects().compactMap { path, interfaces -> PairedCentral? in
            guard path.isDescendant(of: self.path), let device = interfaces[BlueZNames.device],
                device["Paired"]?.boolean == true, let address = BlueZDevicePath.address(of: path, on: self.path)
            else { return nil }
            return PairedCentral(
                address: address, bonded: device["Bonded"]?.boolean ?? true, connected: device["Connected"]?.boolean ?? false,
                addressType: device["AddressType"]?.string == "random" ? .random : .public)
        }.sorted { $0.address < $1.address }
    }

    /// Makes bluetoothd forget `address` (`Adapter1.RemoveDevice`): its keys are deleted and a link to it is
    /// dropped, as when a device is factory-reset. The central is not told; its keys stay.
    public func forget(central address: BluetoothAddress) async throws(BlueZError) {
        let device = BlueZDevicePath.path(of: address, on: path)
        do {
            _ = try await stack.connection.call(
                destination: BlueZNames.service, path: path, interface: BlueZNames.adapter, member: "RemoveDevice",
                arguments: [.objectPath(device)], timeout: .seconds(10))
        } catch {
            throw .call("cannot forget \(address)", error)
        }
    }
}
