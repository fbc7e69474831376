extension DBusConnection {
    private static let bus = "org.freedesktop.DBus"
    private static let busPath: DBusObjectPath = "/org/freedesktop/DBus"

    /// The unique name that owns `name` now, or nil if nobody does.
    public func nameOwner(of name: String) async throws(DBusError) -> String? {
        do {
            let reply = try await call(
                destination: Self.bus, path: Self.busPath, interface: Self.bus, member: "GetNameOwner",
                arguments: [.string(name)])
            return reply.first?.string
        } catch where error.name == DBusError.Name.nameHasNoOwner {
            return nil
        }
    }

    /// Asks the bus for a well-known name; throws unless this connection becomes its primary owner.
    public func requestName(_ name: String) async throws(DBusError) {
        let reply = try await call(
            destination: Self.bus, path: Self.busPath, interface: Self.bus, member: "RequestName",
            arguments: [.string(name), .uint32(4)])  // DBUS_NAME_FLAG_DO_NOT_QUEUE
        guard reply.first?.integer == 1 else {
            throw .named(DBusError.Name.failed, message: "cannot own \(name): it has another owner")
        }
    }

    /// Calls `handler` with the current owner of `name` (nil when none), then on every change, in order.
    ///
    /// The handler runs on the connection's thread and must not block.
    public func watchNameOwner(
        _ name: String, handler: @escaping @Sendable (String?) -> Void
    ) async throws(DBusError) -> DBusSignalSubscription {
        let rule = DBusMatchRule(
            sender: Self.bus, path: Self.busPath, interface: Self.bus, member: "NameOwnerChanged", arg0: name)
        let subscription = try await subscribe(to: rule) { signal in
            guard signal.arguments.count == 3, let owner = signal.arguments[2].string else { return }
            handler(owner.isEmpty ? nil : owner)
        }
        // Ask on the loop thread so the answer is ordered with the signals that follow it.
        let query = try DBusMessage.methodCall(destination: Self.bus, path: Self.busPath, interface: Self.bus, member: "GetNameOwner")
        try query.append([.string(name)])
        try await onLoop { [self] in
            sendWithReply(query, timeout: -1) { result in
                guard case .success(let reply) = result, !reply.isError else { return handler(nil) }
                handler((try? reply.arguments())?.first?.string)
            }
        }
        return subscription
    }
}
