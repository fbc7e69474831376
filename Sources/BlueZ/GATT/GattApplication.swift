import Bluetooth
import DBus
import Dispatch
import Synchronization

/// A GATT application registered with `org.bluez.GattManager1`: the handle of its lifetime.
///
/// Create it with ``register(services:handler:adapter:stack:path:)``; call ``unregister()`` before exit.
/// Requests from centrals reach the ``GattRequestHandler``; only bluetoothd may call its objects.
public final class GattApplication: Sendable {
    public let path: DBusObjectPath
    public let adapterPath: DBusObjectPath
    let stack: BlueZStack
    let handler: any GattRequestHandler
    let characteristics: [CharacteristicID: CharacteristicObject]
    /// The ATT handle of each service, by id (the one the profile asks for, else 0 until bluetoothd assigns one).
    let serviceHandles: [String: Locked<AttributeHandle>]
    let exportedPaths: [DBusObjectPath]
    private let registered = Mutex(false)

    /// Exports `services` below `path` and registers them with the adapter.
    public static func register(
        services: [GattServiceDefinition], handler: any GattRequestHandler, adapter: Adapter, stack: BlueZStack,
        path: DBusObjectPath = "/org/gattemu/app0"
    ) async throws(BlueZError) -> GattApplication {
        let application = GattApplication(
            services: services, handler: handler, adapterPath: adapter.path, sharedSockets: adapter.sharesNotificationSockets, stack: stack,
            path: path)
        try await application.export(services: services)
        try await application.registerWithBlueZ()
        return application
    }

    private init(
        services: [GattServiceDefinition], handler: any GattRequestHandler, adapterPath: DBusObjectPath, sharedSockets: Bool,
        stack: BlueZStack, path: DBusObjectPath
    ) {
        self.path = path
        self.adapterPath = adapterPath
        self.stack = stack
        self.handler = handler
        var characteristics: [CharacteristicID: CharacteristicObject] = [:]
        var paths: [DBusObjectPath] = []
        for (serviceIndex, service) in services.enumerated() {
            let servicePath = path.appending("service\(serviceIndex)")
            paths.append(servicePath)
            for (index, definition) in service.characteristics.enumerated() {
                let characteristicPath = servicePath.appending("char\(index)")
                characteristics[definition.id] = CharacteristicObject(
                    definition: definition, path: characteristicPath, servicePath: servicePath, sharedSockets: sharedSockets)
                paths.append(characteristicPath)
                paths += definition.descriptors.indices.map { characteristicPath.appending("desc\($0)") }
            }
        }
        self.characteristics = characteristics
        self.serviceHandles = Dictionary(
            services.map { ($0.id, Locked<AttributeHandle>($0.handle ?? 0)) }, uniquingKeysWith: { first, _ in first })
        self.exportedPaths = paths
    }

    private func export(services: [GattServiceDefinition]) async throws(BlueZError) {
        let connection = stack.connection
        let policy = stack.callerPolicy
        let servicePaths = Dictionary(
            uniqueKeysWithValues: services.enumerated().map { ($0.element.id, path.appending("service\($0.offset)")) })
        do {
            for (serviceIndex, service) in services.enumerated() {
                let servicePath = path.appending("service\(serviceIndex)")
                let includes = service.includes.compactMap { servicePaths[$0] }
                let handle = serviceHandles[service.id] ?? Locked<AttributeHandle>(service.handle ?? 0)
                try await connection.export(
                    [
                        DBusInterface(
                            name: BlueZNames.gattService,
                            properties: [
                                .constant("UUID", .string(service.uuid.description)),
                                .constant("Primary", .boolean(service.primary)),
                                .constant("Includes", .objectPaths(includes)),
                                Self.handleProperty(handle),
                            ])
                    ], at: servicePath, policy: policy)
                for definition in service.characteristics {
                    guard let object = characteristics[definition.id] else { continue }
                    try await connection.export([characteristicInterface(object)], at: object.path, policy: policy)
                    for (index, descriptor) in definition.descriptors.enumerated() {
                        try await connection.export(
                            [descriptorInterface(descriptor, characteristic: definition.id, parent: object.path)],
                            at: object.path.appending("desc\(index)"), policy: policy)
                    }
                }
            }
            try await connection.exportObjectManager(at: path, policy: policy)
        } catch {
            throw .call("cannot export the GATT application", error)
        }
    }

    private func registerWithBlueZ() async throws(BlueZError) {
        do {
            _ = try await stack.connection.call(
                destination: BlueZNames.service, path: adapterPath, interface: BlueZNames.gattManager,
                member: "RegisterApplication", arguments: [.objectPath(path), .stringVariantDictionary([:])])
            registered.withLock { $0 = true }
        } catch {
            await removeObjects()
            throw .call("bluetoothd refused the GATT application", error)
        }
    }

    /// Unregisters from BlueZ (when still registered) and removes the exported objects.
    public func unregister() async {
        let wasRegistered = registered.withLock { registered in
            defer { registered = false }
            return registered
        }
        if wasRegistered {
            _ = try? await stack.connection.call(
                destination: BlueZNames.service, path: adapterPath, interface: BlueZNames.gattManager,
                member: "UnregisterApplication", arguments: [.objectPath(path)], timeout: .seconds(5))
        }
        await removeObjects()
    }

    private func removeObjects() async {
        for object in characteristics.values { object.closeSockets() }
        try? await stack.connection.unexportObjectManager(at: path)
        for exported in exportedPaths.reversed() {
            try? await stack.connection.unexport(exported)
        }
    }

    /// Sends `value` as a notification or indication of `characteristic`.
    ///
    /// With `central` set and BlueZ's per-central sockets (5.70 and later), only that central receives the
    /// value, and nobody when it has no socket; otherwise every subscribed central does (older BlueZ offers no
    /// other way).
    @discardableResult
    public func notify(_ characteristic: CharacteristicID, value: [UInt8], central: BluetoothAddress? = nil) async throws(ATTError)
        -> NotificationDelivery
    {
        if let delivery = try notifyOnSockets(characteristic, value: value, central: central) { return delivery }
        guard let object = characteristics[characteristic] else { throw .notSupported }
        do {
            try await stack.connection.emitPropertiesChanged(
                path: object.path, interface: BlueZNames.gattCharacteristic, changed: ["Value": .bytes(value)])
        } catch {
            throw .failed
        }
        return .propertiesChanged
    }

    /// Stores `value` and writes it to the acquired notification sockets at once, without suspending;
    /// nil when no socket is open (then ``notify(_:value:central:)`` sends `PropertiesChanged`).
    public func notifyOnSockets(
        _ characteristic: CharacteristicID, value: [UInt8], central: BluetoothAddress? = nil
    ) throws(ATTError) -> NotificationDelivery? {
        guard let object = characteristics[characteristic] else { throw .notSupported }
        object.value.withLock { $0 = value }
        return object.sendOnSockets(value, central: central)
    }

    /// The bytes written to `characteristic`'s acquired notification sockets that bluetoothd has not read yet.
    /// bluetoothd serves each socket on its own: a notification on another characteristic keeps its place after
    /// these only once this is 0 (then they are in bluetoothd's ATT queue, which keeps order).
    public func unreadNotificationBytes(_ characteristic: CharacteristicID) -> Int {
        characteristics[characteristic]?.unreadBytes ?? 0
    }

    /// Stores `value` as the characteristic's `Value` without notifying anyone.
    public func setValue(_ characteristic: CharacteristicID, value: [UInt8]) {
        characteristics[characteristic]?.value.withLock { $0 = value }
    }

    /// The ATT handle of a characteristic's value: the one the profile asked for, or the one bluetoothd assigned;
    /// nil while neither is known (BlueZ 5.66 assigns none).
    public func handle(_ characteristic: CharacteristicID) -> AttributeHandle? {
        characteristics[characteristic].map(\.handle.value).flatMap { $0 == 0 ? nil : $0 }
    }

    /// The ATT handle of a service: asked for or assigned, as ``handle(_:)``; nil while neither is known.
    public func serviceHandle(_ service: String) -> AttributeHandle? {
        serviceHandles[service].map(\.value).flatMap { $0 == 0 ? nil : $0 }
    }

    /// The owners of the open acquired notification sockets of `characteristic`.
    public func acquiredNotificationCentrals(_ characteristic: CharacteristicID) -> [NotificationSocketOwner] {
        characteristics[characteristic]?.sockets.withLock { $0.filter { !$0.value.isClosed }.keys.sorted() } ?? []
    }

    /// The ATT handle BlueZ assigned (0 until it does); BlueZ writes it back through `Set`.
    static func handleProperty(_ handle: Locked<AttributeHandle>) -> DBusProperty {
        DBusProperty(
            "Handle", signature: .uint16, get: { .uint16(handle.value.rawValue) },
            set: { value in
                if case .uint16(let assigned) = value { handle.withLock { $0 = AttributeHandle(rawValue: assigned) } }
            })
    }
}

/// How a notification left gattemu.
public enum NotificationDelivery: Sendable, Equatable {
    /// A `PropertiesChanged` signal: every subscribed central.
    case propertiesChanged
    /// Written to the acquired sockets of these owners; `dropped`: the owners whose socket was full (not
    /// reading), with how many notifications their socket has dropped.
    case sockets([NotificationSocketOwner], dropped: [NotificationSocketOwner: Int] = [:])
}

/// Whose acquired notification socket it is: a central's (the device object BlueZ named, and its address),
/// or the one BlueZ acquired without naming a device (``shared``, written `*`).
public struct NotificationSocketOwner: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var device: DBusObjectPath?
    public var central: BluetoothAddress?

    public init(device: DBusObjectPath?, central: BluetoothAddress?) {
        self.device = device
        self.central = central
    }

    /// The socket of a call that named no device: BlueZ 5.66's one socket for every subscriber.
    public static let shared = NotificationSocketOwner(device: nil, central: nil)

    /// The device path, or `*`.
    public var description: String { device?.rawValue ?? "*" }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.description < rhs.description }
}
