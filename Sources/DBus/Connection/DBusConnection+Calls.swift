import CDBus

extension DBusConnection {
    /// Calls a method and returns the reply's arguments; an error reply throws ``DBusError/named(_:message:)``.
    ///
    /// - Parameter timeout: how long to wait for the reply; nil is libdbus's default (25 s).
    public func call(
        destination: String?, path: DBusObjectPath, interface: String?, member: String,
        arguments: [DBusValue] = [], timeout: Duration? = nil
    ) async throws(DBusError) -> [DBusValue] {
        let message = try DBusMessage.methodCall(destination: destination, path: path, interface: interface, member: member)
        try message.append(arguments)
        let milliseconds =
            timeout.map { Int32(clamping: $0.components.seconds * 1000 + $0.components.attoseconds / 1_000_000_000_000_000) } ?? -1
        guard isConnected else { throw .disconnected }
        let reply: Result<DBusMessage, DBusError> = await withCheckedContinuation { continuation in
            submit(
                { [self] in
                    sendWithReply(message, timeout: milliseconds) { continuation.resume(returning: $0) }
                }, abandoned: { continuation.resume(returning: .failure(.disconnected)) })
        }
        let answer = try reply.get()
        if answer.isError { throw answer.asError() }
        return try answer.arguments()
    }

    /// Sends a method call without waiting for (or asking for) a reply.
    public func callWithoutReply(
        destination: String?, path: DBusObjectPath, interface: String?, member: String, arguments: [DBusValue] = []
    ) async throws(DBusError) {
        let message = try DBusMessage.methodCall(destination: destination, path: path, interface: interface, member: member)
        try message.append(arguments)
        dbus_message_set_no_reply(message.pointer, 1)
        try await onLoop { [self] () throws(DBusError) in try send(message) }
    }

    /// Emits a signal from `path`: to every client whose match rules ask for it, or only to `destination`.
    public func emitSignal(
        path: DBusObjectPath, interface: String, member: String, arguments: [DBusValue] = [], destination: String? = nil
    ) async throws(DBusError) {
        let message = try DBusMessage.signal(path: path, interface: interface, member: member)
        if let destination { dbus_message_set_destination(message.pointer, destination) }
        try message.append(arguments)
        try await onLoop { [self] () throws(DBusError) in try send(message) }
    }

    /// Sends `message` and calls `completion` once with the reply (possibly an error message); loop thread only.
    func sendWithReply(_ message: DBusMessage, timeout: Int32, completion: @escaping @Sendable (Result<DBusMessage, DBusError>) -> Void) {
        var pending: OpaquePointer?
        guard dbus_connection_send_with_reply(pointer, message.pointer, &pending, timeout) != 0, let pending else {
            completion(.failure(.disconnected))
            return
        }
        let box = ReplyBox(completion)
        let context = Unmanaged.passRetained(box).toOpaque()
        let installed = dbus_pending_call_set_notify(
            pending,
            { call, data in
                guard let call, let data else { return }
                let box = Unmanaged<ReplyBox>.fromOpaque(data).takeUnretainedValue()
                if let reply = dbus_pending_call_steal_reply(call) {
                    box.finish(.success(DBusMessage(taking: reply)))
                } else {
                    box.finish(.failure(.disconnected))
                }
            }, context,
            { data in
                guard let data else { return }
                Unmanaged<ReplyBox>.fromOpaque(data).release()
            })
        if installed == 0 {
            Unmanaged<ReplyBox>.fromOpaque(context).release()
            completion(.failure(.invalidArgument("out of memory waiting for a reply")))
        } else if dbus_pending_call_get_completed(pending) != 0, let reply = dbus_pending_call_steal_reply(pending) {
            box.finish(.success(DBusMessage(taking: reply)))
        }
        dbus_pending_call_unref(pending)
    }
}

/// Holds a reply continuation for libdbus; completes at most once, and with `.disconnected` if libdbus
/// releases it without a reply (the connection closed with the call pending).
private final class ReplyBox {
    private var completion: ((Result<DBusMessage, DBusError>) -> Void)?

    init(_ completion: @escaping @Sendable (Result<DBusMessage, DBusError>) -> Void) { self.completion = completion }

    deinit { finish(.failure(.disconnected)) }

    func finish(_ result: Result<DBusMessage, DBusError>) {
        let pending = completion
        completion = nil
        pending?(result)
    }
}
