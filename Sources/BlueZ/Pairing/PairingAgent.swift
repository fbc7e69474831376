import Bluetooth
import DBus
import Synchronization

/// gattemu's `org.bluez.Agent1`, registered with `org.bluez.AgentManager1` as bluetoothd's default agent.
///
/// The default agent's IO capability becomes every adapter's (bluetoothd sets it with the kernel), and
/// without a default agent bluetoothd turns bonding off (unless `AlwaysPairable`). There is one default agent
/// per bluetoothd: registering takes the role from any other (a desktop's agent gets it back when this one
/// is unregistered). Only the current owner of `org.bluez` may call it.
public final class PairingAgent: Sendable {
    public let path: DBusObjectPath
    public let capability: IOCapability
    let stack: BlueZStack
    private let registered = Mutex(true)

    static let agentInterface = "org.bluez.Agent1"
    static let managerInterface = "org.bluez.AgentManager1"
    static let managerPath: DBusObjectPath = "/org/bluez"

    /// Exports the agent at `path`, registers it with `capability` and asks to be the default agent.
    public static func register(
        capability: IOCapability, handler: any PairingHandler, stack: BlueZStack,
        path: DBusObjectPath = "/org/gattemu/agent"
    ) async throws(BlueZError) -> PairingAgent {
        guard let name = capability.name else {
            throw .call(
                "cannot register a pairing agent",
                .named("org.bluez.Error.InvalidArguments", message: "reserved IO capability \(capability.rawValue)"))
        }
        let agent = PairingAgent(path: path, capability: capability, stack: stack)
        do {
            try await stack.connection.export([agent.interface(handler)], at: path, policy: stack.callerPolicy)
        } catch {
            throw .call("cannot export the pairing agent", error)
        }
        do {
            _ = try await stack.connection.call(
                destination: BlueZNames.service, path: managerPath, interface: managerInterface, member: "RegisterAgent",
                arguments: [.objectPath(path), .string(name)])
        } catch {
            try? await stack.connection.unexport(path)
            throw .call("bluetoothd refused the pairing agent", error)
        }
        do {
            _ = try await stack.connection.call(
                destination: BlueZNames.service, path: managerPath, interface: managerInterface, member: "RequestDefaultAgent",
                arguments: [.objectPath(path)])
        } catch {
            await agent.unregister()
            throw .call("bluetoothd did not make gattemu's pairing agent the default one", error)
        }
        return agent
    }

    private init(path: DBusObjectPath, capability: IOCapability, stack: BlueZStack) {
        self.path = path
        self.capability = capability
        self.stack = stack
    }

    /// Whether bluetoothd still has it (false after `Release` or ``unregister()``).
    public var isRegistered: Bool { registered.withLock { $0 } }

    /// Unregisters the agent (when bluetoothd still has it) and removes the object.
    public func unregister() async {
        let was = registered.withLock { value in
            defer { value = false }
            return value
        }
        if was {
            _ = try? await stack.connection.call(
                destination: BlueZNames.service, path: Self.managerPath, interface: Self.managerInterface,
                member: "UnregisterAgent", arguments: [.objectPath(path)], timeout: .seconds(5))
        }
        try? await stack.connection.unexport(path)
    }

    /// The central a call names (its first argument, a device object directly below an adapter), that adapter's name;
    /// the arguments, decoded once.
    private static func request(_ call: DBusMethodCall) throws -> (central: BluetoothAddress, adapter: String, arguments: [DBusValue]) {
        // An agent's answer may wait for the control API: other calls to gattemu must not queue behind it.
        call.begin()
        let arguments = try call.arguments
        guard let path = arguments.first?.objectPath, let adapter = BlueZDevicePath.adapterName(of: path),
            let address = BlueZDevicePath.address(of: path)
        else {
            throw DBusError.named("org.bluez.Error.Rejected", message: "not a device")
        }
        return (address, adapter, arguments)
    }

    /// A passkey argument: in ``Passkey/range``, else the call is rejected.
    private static func passkey(_ value: DBusValue?) throws -> UInt32 {
        guard let value = value?.integer.flatMap(UInt32.init(exactly:)), Passkey.range.contains(value) else {
            throw DBusError.named("org.bluez.Error.Rejected", message: "bad passkey")
        }
        return value
    }

    private static func reply(_ answer: PairingAnswer) throws -> [DBusValue] {
        switch answer {
        case .accept: return []
        case .passkey(let passkey): return [.uint32(passkey % (Passkey.range.upperBound + 1))]
        case .reject: throw DBusError.named("org.bluez.Error.Rejected", message: "Rejected")
        case .cancel: throw DBusError.named("org.bluez.Error.Canceled", message: "Canceled")
        }
    }

    private func interface(_ handler: any PairingHandler) -> DBusInterface {
        let rejected = DBusError.named("org.bluez.Error.Rejected", message: "Rejected")
        return DBusInterface(
            name: Self.agentInterface,
            methods: [
                DBusMethod("Release") { [weak self] call in
                    call.begin()
                    self?.registered.withLock { $0 = false }
                    await handler.pairingCancelled(released: true)
                    return []
                },
                DBusMethod("Cancel") { call in
                    call.begin()
                    await handler.pairingCancelled(released: false)
                    return []
                },
                DBusMethod("RequestPinCode", input: "o", output: "s") { call in
                    let (central, adapter, _) = try Self.request(call)
                    _ = await handler.answer(.pinCode(central: central), on: adapter)
                    throw rejected
                },
                DBusMethod("DisplayPinCode", input: "os") { call in
                    let (central, adapter, _) = try Self.request(call)
                    _ = await handler.answer(.pinCode(central: central), on: adapter)
                    throw rejected
                },
                DBusMethod("RequestPasskey", input: "o", output: "u") { call in
                    let (central, adapter, _) = try Self.request(call)
                    let answer = await handler.answer(.passkeyEntry(central: central), on: adapter)
                    if case .accept = answer { throw rejected }
                    return try Self.reply(answer)
                },
                DBusMethod("DisplayPasskey", input: "ouq") { call in
                    let (central, adapter, arguments) = try Self.request(call)
                    let passkey = try Self.passkey(arguments.dropFirst().first)
                    let entered = arguments.dropFirst(2).first?.integer.map { UInt16(clamping: $0) } ?? 0
                    _ = await handler.answer(.passkeyDisplay(central: central, passkey: passkey, entered: entered), on: adapter)
                    return []
                },
                DBusMethod("RequestConfirmation", input: "ou") { call in
                    let (central, adapter, arguments) = try Self.request(call)
                    let passkey = try Self.passkey(arguments.dropFirst().first)
                    return try Self.reply(await handler.answer(.confirmation(central: central, passkey: passkey), on: adapter))
                },
                DBusMethod("RequestAuthorization", input: "o") { call in
                    let (central, adapter, _) = try Self.request(call)
                    return try Self.reply(await handler.answer(.authorization(central: central), on: adapter))
                },
                DBusMethod("AuthorizeService", input: "os") { call in
                    let (central, adapter, arguments) = try Self.request(call)
                    let uuid = arguments.dropFirst().first?.string ?? ""
                    return try Self.reply(
                        await handler.answer(.service(central: central, uuid: BluetoothUUID(String(uuid.prefix(64)))), on: adapter))
                },
            ])
    }
}
