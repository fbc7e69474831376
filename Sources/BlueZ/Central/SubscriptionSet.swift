import DBus
import Synchronization

/// The signal subscriptions of one central-side object, cancelled together; every rule names `org.bluez`
/// as sender, so only its current owner's signals arrive (see ``DBusConnection/subscribe(to:handler:)``).
final class SubscriptionSet: Sendable {
    private let connection: DBusConnection
    private let subscriptions = Mutex<[DBusSignalSubscription]>([])

    init(_ connection: DBusConnection) { self.connection = connection }

    /// Subscribes `handler` (bus thread, must not block) to `rule`.
    func add(_ rule: DBusMatchRule, handler: @escaping @Sendable (DBusSignal) -> Void) async throws(CentralError) {
        do {
            let subscription = try await connection.subscribe(to: rule, handler: handler)
            subscriptions.withLock { $0.append(subscription) }
        } catch {
            throw .call("cannot follow bluetoothd's signals", error)
        }
    }

    func cancel() async {
        let all = subscriptions.withLock { subscriptions in
            defer { subscriptions = [] }
            return subscriptions
        }
        for subscription in all { await subscription.cancel() }
    }

    /// `InterfacesAdded` from bluetoothd: the object's path and its interfaces' properties.
    static let interfacesAdded = DBusMatchRule(sender: BlueZNames.service, interface: BlueZNames.objectManager, member: "InterfacesAdded")
    /// `InterfacesRemoved` from bluetoothd.
    static let interfacesRemoved = DBusMatchRule(
        sender: BlueZNames.service, interface: BlueZNames.objectManager, member: "InterfacesRemoved")

    /// `PropertiesChanged` of `interface` on `path` and the objects below it, from bluetoothd.
    static func propertiesChanged(below path: DBusObjectPath, interface: String) -> DBusMatchRule {
        DBusMatchRule(
            sender: BlueZNames.service, pathNamespace: path, interface: BlueZNames.properties, member: "PropertiesChanged", arg0: interface)
    }
}

extension DBusSignal {
    /// `InterfacesAdded`'s path and the properties of `interface`, when it is among the interfaces.
    func addedInterface(_ interface: String) -> (DBusObjectPath, [String: DBusValue])? {
        guard let path = arguments.first?.objectPath, case .dictionary(_, _, let interfaces)? = arguments.dropFirst().first,
            let entry = interfaces.first(where: { $0.key.string == interface })
        else { return nil }
        return (path, entry.value.stringKeyedDictionary ?? [:])
    }

    /// `InterfacesRemoved`'s path, when `interface` is among the removed ones.
    func removedInterface(_ interface: String) -> DBusObjectPath? {
        guard let path = arguments.first?.objectPath,
            arguments.dropFirst().first?.arrayElements?.contains(.string(interface)) == true
        else { return nil }
        return path
    }

    /// `PropertiesChanged`'s changed properties and invalidated names.
    var changedProperties: (changed: [String: DBusValue], invalidated: [String])? {
        guard arguments.count >= 2, let changed = arguments[1].stringKeyedDictionary else { return nil }
        let invalidated = arguments.count > 2 ? (arguments[2].arrayElements?.compactMap(\.string) ?? []) : []
        return (changed, invalidated)
    }
}
