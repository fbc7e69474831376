import Bluetooth
import DBus
import Synchronization

/// The live state of one exported characteristic.
final class CharacteristicObject: Sendable {
    let definition: GattCharacteristicDefinition
    let path: DBusObjectPath
    let servicePath: DBusObjectPath
    let value: Mutex<[UInt8]>
    let notifying = Mutex(false)
    /// Acquired notification sockets by owner.
    let sockets = Mutex<[NotificationSocketOwner: AcquiredSocket]>([:])
    let handle: Locked<AttributeHandle>

    /// One socket per characteristic reaches every subscriber (BlueZ before 5.70), whichever central it was
    /// acquired for.
    let sharedSockets: Bool

    init(definition: GattCharacteristicDefinition, path: DBusObjectPath, servicePath: DBusObjectPath, sharedSockets: Bool) {
        self.definition = definition
        self.path = path
        self.servicePath = servicePath
        self.sharedSockets = sharedSockets
        value = Mutex(definition.initialValue)
        handle = Locked(definition.handle ?? 0)
    }

    /// Writes to the sockets that reach `central` (every subscriber when nil); nil when no socket is open.
    ///
    /// Per-central sockets: a notification for one central goes to that central's socket only; with none
    /// (never subscribed, or bluetoothd closed it) it goes nowhere (`.sockets([])`) rather than to other
    /// centrals. Shared sockets (older BlueZ, or `*` when BlueZ names no device): any one of them reaches
    /// every subscriber, including those that subscribed after it was acquired (bluetoothd calls
    /// AcquireNotify only once), so the value is written once, on the central's own socket if it has one.
    func sendOnSockets(_ value: [UInt8], central: BluetoothAddress?) -> NotificationDelivery? {
        let open = sockets.withLock { sockets in
            sockets = sockets.filter { !$0.value.isClosed }
            return sockets
        }
        guard !open.isEmpty else { return nil }
        let own = central.flatMap { central in open.first { $0.key.central == central } }
        let targets: [(key: NotificationSocketOwner, value: AcquiredSocket)]
        if sharedSockets || open[.shared] != nil {
            let shared = own ?? open[.shared].map { (key: NotificationSocketOwner.shared, value: $0) } ?? open.min { $0.key < $1.key }
            targets = shared.map { [$0] } ?? []
        } else if central != nil {
            targets = own.map { [$0] } ?? []
        } else {
            targets = open.sorted { $0.key < $1.key }
        }
        var reached: [NotificationSocketOwner] = []
        var dropped: [NotificationSocketOwner: Int] = [:]
        for (key, socket) in targets {
            switch socket.send(value) {
            case .sent: reached.append(key)
            case .full(let count): dropped[key] = count
            case .closed: break
            }
        }
        return .sockets(reached, dropped: dropped)
    }

    /// The bytes written to this characteristic's sockets that bluetoothd has not read yet.
    var unreadBytes: Int { sockets.withLock { $0.values.reduce(0) { $0 + $1.unreadBytes } } }

    func closeSockets() {
        let all = sockets.withLock { sockets in
            defer { sockets = [:] }
            return Array(sockets.values)
        }
        all.forEach { $0.close() }
    }
}

extension GattApplication {
    func characteristicInterface(_ object: CharacteristicObject) -> DBusInterface {
        let definition = object.definition
        let handler = self.handler
        let id = definition.id
        let connection = stack.connection
        var properties: [DBusProperty] = [
            .constant("UUID", .string(definition.uuid.description)),
            .constant("Service", .objectPath(object.servicePath)),
            .constant("Flags", .strings(definition.flags.bluezFlags)),
            DBusProperty("Value", signature: .bytes, get: { .bytes(object.value.withLock { $0 }) }),
            GattApplication.handleProperty(object.handle),
        ]
        if definition.flags.canNotify {
            properties.append(DBusProperty("Notifying", signature: .boolean, get: { .boolean(object.notifying.withLock { $0 }) }))
            if definition.notifyPath == .acquireNotify {
                properties.append(
                    DBusProperty(
                        "NotifyAcquired", signature: .boolean,
                        get: {
                            .boolean(object.sockets.withLock { !$0.isEmpty })
                        }))
            }
        }
        let hasWrite = definition.flags.canWriteWithResponse
        let hasWriteWithoutResponse = definition.flags.properties.contains(.writeWithoutResponse)
        // Without BlueZ's `type` option: a reply-tracked call is a request; an untracked one is a command
        // unless the characteristic also takes requests (BlueZ 5.66 tracks neither kind then).
        let untrackedWriteKind: GattWriteRequest.Kind? = hasWrite ? nil : .command
        let attribute = GattAttributeID(characteristic: id)
        let adapter = adapterPath
        var methods: [DBusMethod] = [
            Self.readValueMethod(attribute, adapter: adapter, handler: handler),
            Self.writeValueMethod(attribute, adapter: adapter, handler: handler) { call, options in
                options.writeType ?? (call.expectsReply ? .request : hasWriteWithoutResponse ? untrackedWriteKind : .request)
            },
        ]
        if definition.flags.canNotify {
            let notifyingChanged: @Sendable (Bool) async -> Void = { notifying in
                object.notifying.withLock { $0 = notifying }
                try? await connection.emitPropertiesChanged(
                    path: object.path, interface: BlueZNames.gattCharacteristic, changed: ["Notifying": .boolean(notifying)])
            }
            methods += [
                DBusMethod("StartNotify") { call in
                    await handler.subscriptionChanged(
                        GattSubscriptionChange(
                            characteristic: id, kind: .started, context: GattRequestContext(options: GattRequestOptions(), call: call)))
                    await notifyingChanged(true)
                    return []
                },
                DBusMethod("StopNotify") { call in
                    await handler.subscriptionChanged(
                        GattSubscriptionChange(
                            characteristic: id, kind: .stopped, context: GattRequestContext(options: GattRequestOptions(), call: call)))
                    await notifyingChanged(false)
                    return []
                },
                DBusMethod("Confirm") { _ in
                    await handler.indicationConfirmed(characteristic: id)
                    return []
                },
            ]
            if definition.notifyPath == .acquireNotify {
                methods.append(
                    DBusMethod("AcquireNotify", input: "a{sv}", output: "hq") { call in
                        let context = GattRequestContext(options: GattRequestOptions(of: call, adapter: adapter), call: call)
                        let key = NotificationSocketOwner(device: context.device, central: context.central)
                        let mtu = (context.mtu ?? .minimum).rawValue
                        let (ours, theirs) = try AcquiredSocket.makePair(
                            mtu: mtu, loop: connection.loop, onPacket: { _ in },
                            onClose: {
                                let remaining = object.sockets.withLock { sockets in
                                    sockets = sockets.filter { !$0.value.isClosed }
                                    return sockets.count
                                }
                                Task {
                                    if remaining == 0 { await notifyingChanged(false) }
                                    await handler.subscriptionChanged(
                                        GattSubscriptionChange(characteristic: id, kind: .released, context: context))
                                }
                            })
                        let replaced = object.sockets.withLock { sockets in
                            defer { sockets[key] = ours }
                            return sockets[key]
                        }
                        replaced?.close()
                        await handler.subscriptionChanged(GattSubscriptionChange(characteristic: id, kind: .acquired, context: context))
                        await notifyingChanged(true)
                        return [.unixFD(theirs), .uint16(mtu)]
                    })
            }
        }
        return DBusInterface(name: BlueZNames.gattCharacteristic, methods: methods, properties: properties)
    }

    func descriptorInterface(_ descriptor: GattDescriptorDefinition, characteristic: CharacteristicID, parent: DBusObjectPath)
        -> DBusInterface
    {
        let handler = self.handler
        let attribute = GattAttributeID(characteristic: characteristic, descriptor: descriptor.id)
        let value = Locked(descriptor.initialValue)
        return DBusInterface(
            name: BlueZNames.gattDescriptor,
            methods: [
                Self.readValueMethod(attribute, adapter: adapterPath, handler: handler),
                Self.writeValueMethod(
                    attribute, adapter: adapterPath, handler: handler, kind: { _, _ in .request },
                    stored: { written in value.withLock { $0 = written } }),
            ],
            properties: [
                .constant("UUID", .string(descriptor.uuid.description)),
                .constant("Characteristic", .objectPath(parent)),
                .constant("Flags", .strings(descriptor.flags.bluezFlags)),
                DBusProperty("Value", signature: .bytes, get: { .bytes(value.value) }),
                GattApplication.handleProperty(Locked<AttributeHandle>(descriptor.handle ?? 0)),
            ])
    }

    /// `ReadValue(a{sv}) → ay`, answered by the handler.
    static func readValueMethod(_ attribute: GattAttributeID, adapter: DBusObjectPath, handler: any GattRequestHandler) -> DBusMethod {
        DBusMethod("ReadValue", input: "a{sv}", output: "ay") { call in
            let options: GattRequestOptions
            switch call.readArguments({ GattRequestOptions.read(&$0, adapter: adapter) }) {
            case .success(let read): options = read
            case .failure(let error): throw error.dbusError
            }
            let request = GattReadRequest(
                attribute: attribute, offset: options.offset, context: GattRequestContext(options: options, call: call))
            do throws(ATTError) {
                return [.bytes(try await handler.read(request))]
            } catch {
                throw error.dbusError
            }
        }
    }

    /// `WriteValue(ay, a{sv})`, answered by the handler; `kind` tells the write type from the call and its options.
    static func writeValueMethod(
        _ attribute: GattAttributeID, adapter: DBusObjectPath, handler: any GattRequestHandler,
        kind: @escaping @Sendable (DBusMethodCall, GattRequestOptions) -> GattWriteRequest.Kind?,
        stored: @escaping @Sendable ([UInt8]) -> Void = { _ in }
    ) -> DBusMethod {
        DBusMethod("WriteValue", input: "aya{sv}") { call in
            let value: [UInt8]
            let options: GattRequestOptions
            switch call.readArguments({ GattRequestOptions.write(&$0, adapter: adapter) }) {
            case .success(let write): (value, options) = write
            case .failure(let error): throw error.dbusError
            }
            let request = GattWriteRequest(
                attribute: attribute, value: value, offset: options.offset,
                kind: kind(call, options), bluetoothdAnswered: !call.expectsReply,
                prepareAuthorize: options.prepareAuthorize, context: GattRequestContext(options: options, call: call))
            do throws(ATTError) {
                try await handler.write(request)
            } catch {
                throw error.dbusError
            }
            stored(request.value)
            return []
        }
    }
}
