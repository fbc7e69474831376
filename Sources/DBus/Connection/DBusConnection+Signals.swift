extension DBusConnection {
    struct SignalSubscription {
        var rule: DBusMatchRule
        var handler: @Sendable (DBusSignal) -> Void
    }

    /// Subscribes `handler` to signals matching `rule`, from the time this returns until the subscription is cancelled.
    ///
    /// The handler runs on the connection's thread, in arrival order, and must not block.
    public func subscribe(
        to rule: DBusMatchRule, handler: @escaping @Sendable (DBusSignal) -> Void
    ) async throws(DBusError) -> DBusSignalSubscription {
        let id = try await onLoop { [self] () throws(DBusError) -> UInt64 in
            let id = nextSubscriptionID
            nextSubscriptionID += 1
            signalSubscriptions[id] = SignalSubscription(rule: rule, handler: handler)
            return id
        }
        do {
            _ = try await call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                interface: "org.freedesktop.DBus", member: "AddMatch", arguments: [.string(rule.description)])
        } catch {
            _ = try? await onLoop { [self] in signalSubscriptions[id] = nil }
            throw error
        }
        return DBusSignalSubscription(connection: self, id: id, rule: rule)
    }

    /// The signals matching `rule` as a stream; the subscription ends when the stream's consumer stops.
    public func signals(matching rule: DBusMatchRule) async throws(DBusError) -> AsyncStream<DBusSignal> {
        let (stream, continuation) = AsyncStream.makeStream(of: DBusSignal.self, bufferingPolicy: .unbounded)
        let subscription = try await subscribe(to: rule) { continuation.yield($0) }
        continuation.onTermination = { _ in Task { await subscription.cancel() } }
        return stream
    }

    func unsubscribe(id: UInt64, rule: DBusMatchRule) async {
        _ = try? await onLoop { [self] in signalSubscriptions[id] = nil }
        _ = try? await call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus", member: "RemoveMatch", arguments: [.string(rule.description)])
    }

    /// Hands an incoming signal to every matching subscription; loop thread only.
    func deliverSignal(_ message: DBusMessage) {
        guard !signalSubscriptions.isEmpty,
              let path = message.path, let interface = message.interface, let member = message.member,
              let arguments = try? message.arguments()
        else { return }
        let signal = DBusSignal(sender: message.sender ?? "", path: path, interface: interface, member: member, arguments: arguments)
        for (_, subscription) in signalSubscriptions.sorted(by: { $0.key < $1.key }) where subscription.rule.matches(signal) {
            subscription.handler(signal)
        }
    }
}

/// A live signal subscription; cancel it to stop delivery and remove the bus match rule.
public struct DBusSignalSubscription: Sendable {
    let connection: DBusConnection
    let id: UInt64
    let rule: DBusMatchRule

    public func cancel() async {
        await connection.unsubscribe(id: id, rule: rule)
    }
}
