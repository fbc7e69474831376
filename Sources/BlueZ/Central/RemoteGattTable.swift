import Bluetooth
import DBus

/// A connected device's GATT table as BlueZ exports it (`GattService1`, `GattCharacteristic1`,
/// `GattDescriptor1` objects below the device), typed, bounded and in handle order.
///
/// Handles: BlueZ 5.82 has a `Handle` property on these objects (the service's start handle, the
/// characteristic's declaration handle, the descriptor's handle); 5.66 has none, but names each object after
/// the same handle (`service000a/char000b/desc000d`), which is read instead. Services BlueZ keeps to
/// itself (5.66: those its plugins claim, such as Generic Access) are not exported and so not here.
public struct RemoteGattTable: Sendable, Equatable {
    public struct Service: Sendable, Equatable {
        public var path: DBusObjectPath
        public var uuid: BluetoothUUID
        public var isPrimary: Bool
        /// The service declaration's handle, when known.
        public var handle: AttributeHandle?
        /// The object paths of the services it includes.
        public var includes: [DBusObjectPath]
        public var characteristics: [Characteristic] = []
    }

    public struct Characteristic: Sendable, Equatable {
        public var path: DBusObjectPath
        public var uuid: BluetoothUUID
        /// BlueZ's `Flags` (the first ``Limits/flags`` strings), parsed.
        public var flags: CharacteristicFlags
        /// The declaration's handle (the value follows at the next handle), when known.
        public var handle: AttributeHandle?
        /// The link's ATT MTU as BlueZ reports it on the characteristic (newer BlueZ).
        public var mtu: UInt16?
        public var descriptors: [Descriptor] = []

        public var properties: CharacteristicProperties { flags.properties }
        /// The value handle: the one after the declaration.
        public var valueHandle: AttributeHandle? { handle?.next }
    }

    public struct Descriptor: Sendable, Equatable {
        public var path: DBusObjectPath
        public var uuid: BluetoothUUID
        public var flags: CharacteristicFlags
        public var handle: AttributeHandle?
    }

    /// Where the handles came from.
    public enum HandleSource: String, Sendable {
        /// The `Handle` properties (BlueZ 5.82 and later).
        case property
        /// The object paths (`char000b`), as every BlueZ version names them.
        case objectPath = "object path"
        /// Neither: some or all handles are unknown.
        case unknown
    }

    public var services: [Service] = []
    public var handleSource = HandleSource.unknown
    /// What was ignored or cut, one line each.
    public var notes: [String] = []

    public enum Limits {
        public static let services = 128
        public static let characteristics = 512
        public static let descriptors = 1024
        public static let flags = 24
        public static let includes = 32
    }

    public init() {}

    public var characteristics: [Characteristic] { services.flatMap(\.characteristics) }

    /// The GATT objects below `device` among bluetoothd's objects.
    public static func read(device: DBusObjectPath, stack: BlueZStack) async throws(CentralError) -> RemoteGattTable {
        let objects: [DBusObjectPath: [String: [String: DBusValue]]]
        do {
            objects = try await stack.managedObjects()
        } catch {
            throw .stack(error)
        }
        return RemoteGattTable(objects: objects, device: device)
    }

    /// Builds the table from `GetManagedObjects`' answer.
    public init(objects: [DBusObjectPath: [String: [String: DBusValue]]], device: DBusObjectPath) {
        var servicesByPath: [DBusObjectPath: Service] = [:]
        var characteristicsByPath: [DBusObjectPath: (service: DBusObjectPath, value: Characteristic)] = [:]
        var descriptors: [(characteristic: DBusObjectPath, value: Descriptor)] = []
        var sources: Set<HandleSource> = []
        var skipped: [String: Int] = [:]
        let below = objects.filter { $0.key != device && $0.key.isDescendant(of: device) }.sorted { $0.key < $1.key }
        for (path, interfaces) in below {
            if let properties = interfaces[BlueZNames.gattService] {
                guard servicesByPath.count < Limits.services else {
                    skipped["services past \(Limits.services)", default: 0] += 1
                    continue
                }
                guard let uuid = Self.uuid(properties) else {
                    skipped["services without a valid UUID", default: 0] += 1
                    continue
                }
                let includes = (properties["Includes"]?.arrayElements ?? []).prefix(Limits.includes).compactMap(\.objectPath)
                servicesByPath[path] = Service(
                    path: path, uuid: uuid, isPrimary: properties["Primary"]?.boolean ?? true,
                    handle: Self.handle(properties, path: path, prefix: "service", sources: &sources), includes: Array(includes))
            } else if let properties = interfaces[BlueZNames.gattCharacteristic] {
                guard characteristicsByPath.count < Limits.characteristics else {
                    skipped["characteristics past \(Limits.characteristics)", default: 0] += 1
                    continue
                }
                guard let uuid = Self.uuid(properties) else {
                    skipped["characteristics without a valid UUID", default: 0] += 1
                    continue
                }
                let service =
                    properties["Service"]?.objectPath
                    ?? DBusObjectPath(path.rawValue.split(separator: "/").dropLast().joined(separator: "/").prefixedWithSlash)
                characteristicsByPath[path] = (
                    service,
                    Characteristic(
                        path: path, uuid: uuid, flags: Self.flags(properties),
                        handle: Self.handle(properties, path: path, prefix: "char", sources: &sources),
                        mtu: properties["MTU"]?.integer.flatMap(ATTMTU.init(exactly:))?.rawValue)
                )
            } else if let properties = interfaces[BlueZNames.gattDescriptor] {
                guard descriptors.count < Limits.descriptors else {
                    skipped["descriptors past \(Limits.descriptors)", default: 0] += 1
                    continue
                }
                guard let uuid = Self.uuid(properties) else {
                    skipped["descriptors without a valid UUID", default: 0] += 1
                    continue
                }
                let characteristic =
                    properties["Characteristic"]?.objectPath
                    ?? DBusObjectPath(path.rawValue.split(separator: "/").dropLast().joined(separator: "/").prefixedWithSlash)
                descriptors.append(
                    (
                        characteristic,
                        Descriptor(
                            path: path, uuid: uuid, flags: Self.flags(properties),
                            handle: Self.handle(properties, path: path, prefix: "desc", sources: &sources))
                    ))
            }
        }
        for (characteristic, descriptor) in descriptors {
            guard characteristicsByPath[characteristic] != nil else {
                skipped["descriptors of no known characteristic", default: 0] += 1
                continue
            }
            characteristicsByPath[characteristic]?.value.descriptors.append(descriptor)
        }
        for (_, entry) in characteristicsByPath.sorted(by: { $0.key < $1.key }) {
            guard servicesByPath[entry.service] != nil else {
                skipped["characteristics of no known service", default: 0] += 1
                continue
            }
            var characteristic = entry.value
            characteristic.descriptors.sort { Self.order($0.handle, $0.path, $1.handle, $1.path) }
            servicesByPath[entry.service]?.characteristics.append(characteristic)
        }
        services = servicesByPath.values.map { service in
            var service = service
            service.characteristics.sort { Self.order($0.handle, $0.path, $1.handle, $1.path) }
            service.includes = service.includes.filter { servicesByPath[$0] != nil }
            return service
        }.sorted { Self.order($0.handle, $0.path, $1.handle, $1.path) }
        handleSource = sources.contains(.unknown) || sources.isEmpty ? .unknown : sources.contains(.objectPath) ? .objectPath : .property
        notes = skipped.sorted { $0.key < $1.key }.map { "\($0.value) GATT object\($0.value == 1 ? "" : "s") ignored: \($0.key)" }
    }

    private static func uuid(_ properties: [String: DBusValue]) -> BluetoothUUID? {
        properties["UUID"]?.string.flatMap { $0.utf8.count <= 36 ? BluetoothUUID($0) : nil }
    }

    private static func flags(_ properties: [String: DBusValue]) -> CharacteristicFlags {
        CharacteristicFlags(bluezFlags: (properties["Flags"]?.arrayElements ?? []).prefix(Limits.flags).compactMap(\.string))
    }

    /// The `Handle` property when it is there and not 0, else the 4 hex digits BlueZ puts after `prefix` in the
    /// object's name.
    private static func handle(_ properties: [String: DBusValue], path: DBusObjectPath, prefix: String, sources: inout Set<HandleSource>)
        -> AttributeHandle?
    {
        if let handle = properties["Handle"]?.integer.flatMap({ UInt16(exactly: $0) }), handle != 0 {
            sources.insert(.property)
            return AttributeHandle(rawValue: handle)
        }
        if let last = path.rawValue.split(separator: "/").last, last.hasPrefix(prefix) {
            let digits = last.dropFirst(prefix.count)
            if digits.count == 4, digits.allSatisfy(\.isHexDigit), let handle = UInt16(digits, radix: 16), handle != 0 {
                sources.insert(.objectPath)
                return AttributeHandle(rawValue: handle)
            }
        }
        sources.insert(.unknown)
        return nil
    }

    /// Handle order; objects without a handle after those with one, by path.
    private static func order(_ a: AttributeHandle?, _ pathA: DBusObjectPath, _ b: AttributeHandle?, _ pathB: DBusObjectPath) -> Bool {
        switch (a, b) {
        case (let a?, let b?): a != b ? a < b : pathA < pathB
        case (.some, nil): true
        case (nil, .some): false
        case (nil, nil): pathA < pathB
        }
    }
}

extension String {
    fileprivate var prefixedWithSlash: String { hasPrefix("/") ? self : "/" + self }
}
