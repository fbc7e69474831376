extension DBusConnection {
    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    static let objectManagerInterface = "org.freedesktop.DBus.ObjectManager"
    static let introspectableInterface = "org.freedesktop.DBus.Introspectable"
    static let peerInterface = "org.freedesktop.DBus.Peer"

    /// Exports an object implementing `interfaces` at `path`; callers outside `policy` are refused.
    ///
    /// An object manager above `path` announces it with `InterfacesAdded`.
    public func export(
        _ interfaces: [DBusInterface], at path: DBusObjectPath, policy: DBusCallerPolicy = .anyone
    ) async throws(DBusError) {
        guard path.isValid else { throw .invalidArgument("bad object path \"\(path)\"") }
        try await onLoop { [self] () throws(DBusError) in
            guard objects.objects[path] == nil else { throw .invalidArgument("\(path) is already exported") }
            objects.objects[path] = .init(interfaces: interfaces, policy: policy)
            for manager in objects.managers(above: path) {
                let signal = try DBusMessage.signal(path: manager, interface: Self.objectManagerInterface, member: "InterfacesAdded")
                try signal.append([.objectPath(path), DBusObjectRegistry.interfacesAndProperties(interfaces)])
                try send(signal)
            }
        }
    }

    /// Removes the object at `path`; an object manager above it announces `InterfacesRemoved`.
    public func unexport(_ path: DBusObjectPath) async throws(DBusError) {
        try await onLoop { [self] () throws(DBusError) in
            guard let entry = objects.objects.removeValue(forKey: path) else { return }
            for manager in objects.managers(above: path) {
                let signal = try DBusMessage.signal(path: manager, interface: Self.objectManagerInterface, member: "InterfacesRemoved")
                try signal.append([.objectPath(path), .strings(entry.interfaces.map(\.name))])
                try send(signal)
            }
        }
    }

    /// Serves `org.freedesktop.DBus.ObjectManager` at `path` for the objects exported below it.
    public func exportObjectManager(at path: DBusObjectPath, policy: DBusCallerPolicy = .anyone) async throws(DBusError) {
        guard path.isValid else { throw .invalidArgument("bad object path \"\(path)\"") }
        try await onLoop { [self] in objects.managers[path] = policy }
    }

    /// Stops serving the object manager at `path`.
    public func unexportObjectManager(at path: DBusObjectPath) async throws(DBusError) {
        try await onLoop { [self] in objects.managers[path] = nil }
    }

    /// Emits `org.freedesktop.DBus.Properties.PropertiesChanged` for `interface` at `path`.
    public func emitPropertiesChanged(
        path: DBusObjectPath, interface: String, changed: [String: DBusValue], invalidated: [String] = []
    ) async throws(DBusError) {
        try await emitSignal(
            path: path, interface: Self.propertiesInterface, member: "PropertiesChanged",
            arguments: [.string(interface), .stringVariantDictionary(changed), .strings(invalidated)])
    }

    // MARK: Dispatch (loop thread)

    func dispatchMethodCall(_ message: DBusMessage) {
        guard let path = message.path, let member = message.member else {
            return replyError(to: message, DBusError.Name.unknownMethod, "method call without path or member")
        }
        let interface = message.interface
        let entry = objects.objects[path]
        let managerPolicy = objects.managers[path]
        if let policy = entry?.policy ?? managerPolicy, !policy.allows(message.sender) {
            refused(message, .callerNotAllowed)
            return replyError(to: message, DBusError.Name.accessDenied, "\(message.sender ?? "this caller") may not call \(path)")
        }
        switch (interface, member) {
        case (Self.introspectableInterface?, "Introspect"), (nil, "Introspect"):
            let xml = DBusIntrospection.xml(
                interfaces: entry?.interfaces ?? [], isObjectManager: managerPolicy != nil,
                children: objects.childNodes(of: path))
            return reply(to: message, [.string(xml)])
        case (Self.peerInterface?, "Ping"):
            return reply(to: message, [])
        case (Self.objectManagerInterface?, "GetManagedObjects") where managerPolicy != nil:
            return reply(to: message, [objects.managedObjects(below: path)])
        case (Self.propertiesInterface?, _):
            guard let entry else { return replyError(to: message, DBusError.Name.unknownObject, "no object at \(path)") }
            let arguments: [DBusValue]
            do {
                arguments = try message.arguments()
            } catch {
                return replyError(to: message, DBusError.Name.invalidArgs, error.description)
            }
            return handlePropertiesCall(message, member: member, arguments: arguments, interfaces: entry.interfaces)
        default:
            break
        }
        guard let entry else {
            return replyError(to: message, DBusError.Name.unknownObject, "no object at \(path)")
        }
        let candidates = interface.map { name in entry.interfaces.filter { $0.name == name } } ?? entry.interfaces
        if let interface, candidates.isEmpty {
            return replyError(to: message, DBusError.Name.unknownInterface, "\(path) has no interface \(interface)")
        }
        guard let method = candidates.lazy.flatMap(\.methods).first(where: { $0.name == member }) else {
            return replyError(to: message, DBusError.Name.unknownMethod, "no method \(member) on \(path)")
        }
        let signature = message.signature
        guard signature == method.inputSignature else {
            return replyError(
                to: message, DBusError.Name.invalidArgs,
                "\(member) takes (\(method.inputSignature)), got (\(signature))")
        }
        let previous = lastMethodCall
        let gate = DBusCallGate()
        lastMethodCall = gate
        let call = DBusMethodCall(
            sender: message.sender, path: path, interface: interface, member: member, message: message,
            gate: gate)
        let handler = method.handler
        // Started on the loop: a handler that calls an actor served by the same loop runs without a hand-off.
        Task(executorPreference: loop) { [self] in
            await previous?.opened()
            let outcome: Result<[DBusValue], any Error>
            do {
                outcome = .success(try await handler(call))
            } catch {
                outcome = .failure(error)
            }
            gate.open()
            submit { [self] in
                switch outcome {
                case .success(let values): reply(to: message, values)
                case .failure(let error as DBusError): replyError(to: message, error)
                case .failure(let error): replyError(to: message, DBusError.Name.failed, String(describing: error))
                }
            }
        }
    }

    private func handlePropertiesCall(
        _ message: DBusMessage, member: String, arguments: [DBusValue], interfaces: [DBusInterface]
    ) {
        guard let interfaceName = arguments.first?.string else {
            return replyError(to: message, DBusError.Name.invalidArgs, "\(member) needs an interface name")
        }
        guard let interface = interfaces.first(where: { $0.name == interfaceName }) else {
            return replyError(to: message, DBusError.Name.unknownInterface, "no interface \(interfaceName)")
        }
        switch member {
        case "GetAll":
            reply(to: message, [.stringVariantDictionary(interface.propertyValues())])
        case "Get":
            guard arguments.count == 2, let name = arguments[1].string else {
                return replyError(to: message, DBusError.Name.invalidArgs, "Get takes (ss)")
            }
            guard let value = interface.properties.first(where: { $0.name == name })?.get() else {
                return replyError(to: message, DBusError.Name.unknownProperty, "no property \(name) on \(interfaceName)")
            }
            reply(to: message, [.variant(value)])
        case "Set":
            guard arguments.count == 3, let name = arguments[1].string, case .variant(let value) = arguments[2] else {
                return replyError(to: message, DBusError.Name.invalidArgs, "Set takes (ssv)")
            }
            guard let property = interface.properties.first(where: { $0.name == name }) else {
                return replyError(to: message, DBusError.Name.unknownProperty, "no property \(name) on \(interfaceName)")
            }
            guard let setter = property.set else {
                return replyError(to: message, DBusError.Name.propertyReadOnly, "\(name) is read-only")
            }
            guard value.signature == property.signature else {
                return replyError(to: message, DBusError.Name.invalidArgs, "\(name) is \(property.signature), got \(value.signature)")
            }
            do {
                try setter(value)
                reply(to: message, [])
            } catch let error as DBusError {
                replyError(to: message, error)
            } catch {
                replyError(to: message, DBusError.Name.failed, String(describing: error))
            }
        default:
            replyError(to: message, DBusError.Name.unknownMethod, "no method \(member) on \(Self.propertiesInterface)")
        }
    }

    private func reply(to message: DBusMessage, _ values: [DBusValue]) {
        guard !message.noReplyExpected else { return }
        do {
            let reply = try message.methodReturn()
            try reply.append(values)
            try send(reply)
        } catch {
            replyError(to: message, DBusError.Name.failed, "cannot encode the reply: \(error)")
        }
    }

    private func replyError(to message: DBusMessage, _ error: DBusError) {
        switch error {
        case .named(let name, let text): replyError(to: message, name, text)
        default: replyError(to: message, DBusError.Name.failed, error.description)
        }
    }

    private func replyError(to message: DBusMessage, _ name: String, _ text: String) {
        guard !message.noReplyExpected, let reply = try? message.errorReply(name: name, message: text) else { return }
        try? send(reply)
    }
}
