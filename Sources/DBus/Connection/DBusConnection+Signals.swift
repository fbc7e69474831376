extension DBusConnection {
    struct SignalSubscription {
        var rule: DBusMatchRule
        var handler: @Sendable (DBusSignal) -> Void
    }

    /// Subscribes `handler` to signals matching `rule`, from the time this returns until the subscription is cancelled.
    ///
    /// A rule naming a well-known sender (`org.bluez`) gets only signals from that name's current owner: the
    /// connection follows the owner (see ``watchNameOwner(_:handler:)``). The handler runs on the connection's
    /// thread, in arrival order, and must not block.
    public func subscribe(
        to rule: DBusMatchRule, handler: @escaping @Sendable (DBusSignal) -> Void
    ) async throws(DBusError) -> DBusSignalSubscription {
        if rule.followsWellKnownSender, let sender = rule.sender { try await follow(sender) }
        let id = try await onLoop { [self] () throws(DBusError) -> UInt64 in
            let id = nextSubscriptionID
            nextSubscriptionID += 1
            signalSubscriptions[id] = SignalSubscription(rule: rule, handler: handler)
            return id
        }
        do {
            _ = try await call(
                destination: DBusMatchRule.busName, path: "/org/freedesktop/DBus",
                interface: DBusMatchRule.busName, member: "AddMatch", arguments: [.string(rule.description)])
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
    ///
    /// The bus delivers a signal addressed to us whatever our match rules say, and lets any client send one:
    /// those are refused unless the bus itself sent them, before their arguments are even read. A signal
    /// from a sender other than the one a subscription names (a client posing as `org.bluez`) reaches no
    /// handler and is reported as refused.
    func deliverSignal(_ message: DBusMessage) {
        let sender = message.sender ?? ""
        if message.destination != nil, sender != DBusMatchRule.busName {
            return refused(message, .unicastSignal)
        }
        guard !signalSubscriptions.isEmpty, let path = message.path, let interface = message.interface, let member = message.member
        else { return }
        // Headers first: a signal no rule could match is dropped without decoding its arguments.
        let header = DBusSignal(sender: sender, path: path, interface: interface, member: member, arguments: [])
        let candidates = signalSubscriptions.filter { $0.value.rule.matchesHeader(of: header) }
        guard !candidates.isEmpty, let arguments = try? message.arguments() else { return }
        let signal = DBusSignal(sender: sender, path: path, interface: interface, member: member, arguments: arguments)
        let owners = state.withLock { $0.nameOwners }
        var delivered = false
        var posing = false
        for (_, subscription) in candidates.sorted(by: { $0.key < $1.key }) {
            if subscription.rule.matches(signal, owner: { owners[$0] }) {
                subscription.handler(signal)
                delivered = true
            } else if subscription.rule.sender != nil, subscription.rule.matches(signal, owner: { _ in sender }) {
                posing = true
            }
        }
        if posing, !delivered { refused(message, .wrongSender) }
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
