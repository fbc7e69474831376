import BlueZ
import Bluetooth
import DBus
import Profile

/// Which of the device's GATT objects each of the mirror's characteristics and descriptors stands for.
///
/// The mirror's profile is made from the device's table (`CloneReplica`, `ReplicaProfile`), which keeps its
/// order and leaves out only what BlueZ serves itself: a characteristic is matched by its service's UUID and
/// place among the services of that UUID, its own UUID and place among that service's characteristics of that
/// UUID (and a descriptor likewise below it), so two characteristics with one UUID stay apart and the match
/// holds when the device's object paths change (after it came back).
public struct RelayTargets: Sendable {
    /// A remote characteristic with what the relay needs of it.
    public struct Characteristic: Sendable {
        public var path: DBusObjectPath
        public var properties: CharacteristicProperties
        /// The value handle in the recording (the device's, or a stand-in when BlueZ gave none).
        public var handle: AttributeHandle?
        public var descriptors: [String: DBusObjectPath]
    }

    public internal(set) var characteristics: [CharacteristicID: Characteristic] = [:]
    /// The profile's characteristic id for each remote characteristic path.
    public private(set) var ids: [DBusObjectPath: CharacteristicID] = [:]
    /// Mirror characteristics the device's table has no counterpart for (it changed since the profile was made).
    public private(set) var unmatched: [CharacteristicID] = []
    /// The device's first Client Characteristic Configuration descriptor (and its handle): reading it is the relay's
    /// link check (``RelayUpstream/checkLink()``). A read of it changes nothing on any device; nil when it has none.
    public private(set) var linkCheck: (path: DBusObjectPath, handle: AttributeHandle?)?

    /// Matches `profile`'s characteristics with `table`'s; `handles` are the recording's value handles by path.
    public init(profile: DeviceProfile, table: RemoteGattTable, handles: [DBusObjectPath: AttributeHandle] = [:]) {
        var remote: [Key: RemoteGattTable.Characteristic] = [:]
        var serviceCounts: [BluetoothUUID: Int] = [:]
        linkCheck = table.characteristics.lazy.flatMap(\.descriptors)
            .first { $0.uuid == .clientCharacteristicConfiguration }.map { ($0.path, $0.handle) }
        for service in table.services {
            let serviceIndex = serviceCounts[service.uuid, default: 0]
            serviceCounts[service.uuid] = serviceIndex + 1
            var counts: [BluetoothUUID: Int] = [:]
            for characteristic in service.characteristics {
                let index = counts[characteristic.uuid, default: 0]
                counts[characteristic.uuid] = index + 1
                remote[Key(service: service.uuid, serviceIndex: serviceIndex, characteristic: characteristic.uuid, index: index)] =
                    characteristic
            }
        }
        serviceCounts = [:]
        for service in profile.services {
            let serviceIndex = serviceCounts[service.uuid, default: 0]
            serviceCounts[service.uuid] = serviceIndex + 1
            var counts: [BluetoothUUID: Int] = [:]
            for characteristic in service.characteristics {
                let index = counts[characteristic.uuid, default: 0]
                counts[characteristic.uuid] = index + 1
                let key = Key(service: service.uuid, serviceIndex: serviceIndex, characteristic: characteristic.uuid, index: index)
                guard let match = remote[key] else {
                    unmatched.append(characteristic.id)
                    continue
                }
                var descriptors: [String: DBusObjectPath] = [:]
                var descriptorCounts: [BluetoothUUID: Int] = [:]
                var remoteDescriptors: [DescriptorKey: DBusObjectPath] = [:]
                for descriptor in match.descriptors {
                    let index = descriptorCounts[descriptor.uuid, default: 0]
                    descriptorCounts[descriptor.uuid] = index + 1
                    remoteDescriptors[DescriptorKey(uuid: descriptor.uuid, index: index)] = descriptor.path
                }
                descriptorCounts = [:]
                for descriptor in characteristic.descriptors {
                    let index = descriptorCounts[descriptor.uuid, default: 0]
                    descriptorCounts[descriptor.uuid] = index + 1
                    if let path = remoteDescriptors[DescriptorKey(uuid: descriptor.uuid, index: index)] {
                        descriptors[descriptor.id] = path
                    }
                }
                characteristics[characteristic.id] = Characteristic(
                    path: match.path, properties: match.properties, handle: handles[match.path] ?? match.valueHandle,
                    descriptors: descriptors)
                ids[match.path] = characteristic.id
            }
        }
    }

    /// The remote object (and its D-Bus interface) an attribute of the mirror stands for.
    public func object(_ attribute: GattAttributeID) -> (path: DBusObjectPath, interface: String)? {
        guard let characteristic = characteristics[attribute.characteristic] else { return nil }
        guard let descriptor = attribute.descriptor else { return (characteristic.path, BlueZNames.gattCharacteristic) }
        return characteristic.descriptors[descriptor].map { ($0, BlueZNames.gattDescriptor) }
    }

    private struct Key: Hashable {
        var service: BluetoothUUID
        var serviceIndex: Int
        var characteristic: BluetoothUUID
        var index: Int
    }

    private struct DescriptorKey: Hashable {
        var uuid: BluetoothUUID
        var index: Int
    }
}

extension RelayTargets {
    /// These targets with the recording handles `earlier` gave each characteristic (the recording keeps naming
    /// a characteristic as it did when the relay started).
    func keepingHandles(of earlier: RelayTargets) -> RelayTargets {
        var copy = self
        for (id, characteristic) in earlier.characteristics where copy.characteristics[id] != nil {
            copy.characteristics[id]?.handle = characteristic.handle
        }
        return copy
    }
}
