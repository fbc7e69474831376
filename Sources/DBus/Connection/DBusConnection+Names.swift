extension DBusConnection {
    private static let bus = DBusMatchRule.busName
    private static let busPath: DBusObjectPath = "/org/freedesktop/DBus"

    /// A well-known name this connection follows: its owner is kept current from `NameOwnerChanged` signals
    /// that the bus itself sent, so that signals claiming to come from the name can be checked.
    struct FollowedName {
        var watchers: [UInt64: @Sendable (String?) -> Void] = [:]
        /// False until the first `GetNameOwner` answer; callers of ``follow(_:)`` wait for it.
        var known = false
        var waiting: [@Sendable () -> Void] = []
    }

    /// The unique name that owns `name` now, or nil if nobody does (asks the bus).
    public func nameOwner(of name: String) async throws(DBusError) -> String? {
        do {
            let reply = try await call(
                destination: Self.bus, path: Self.busPath, interface: Self.bus, member: "GetNameOwner",
                arguments: [.string(name)])
            return reply.first?.string
        } catch  where error.name == DBusError.Name.nameHasNoOwner {
            return nil
        }
    }

    /// The owner of a followed name as last heard from the bus (nil: nobody, or not followed); any thread.
    public func currentOwner(of name: String) -> String? {
        state.withLock { $0.nameOwners[name] }
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
    /// Changes are taken only from the bus itself: a `NameOwnerChanged` any other client sends is ignored.
    /// The handler runs on the connection's thread and must not block.
    @discardableResult
    public func watchNameOwner(
        _ name: String, handler: @escaping @Sendable (String?) -> Void
    ) async throws(DBusError) -> DBusNameWatch {
        try await follow(name)
        let id = try await onLoop { [self] () -> UInt64 in
            let id = nextSubscriptionID
            nextSubscriptionID += 1
            followedNames[name]?.watchers[id] = handler
            handler(currentOwner(of: name))
            return id
        }
        return DBusNameWatch(connection: self, name: name, id: id)
    }

    func stopWatching(_ name: String, id: UInt64) async {
        _ = try? await onLoop { [self] in followedNames[name]?.watchers[id] = nil }
    }

    /// Starts following the owner of `name` (once per name) and returns when it is known.
    func follow(_ name: String) async throws(DBusError) {
        let isNew = try await onLoop { [self] () -> Bool in
            guard followedNames[name] == nil else { return false }
            followedNames[name] = FollowedName()
            return true
        }
        guard isNew else {
            // Someone else started following it: wait until its owner is known.
            return try await onLoopAsync { [self] done in
                if followedNames[name]?.known != false { return done() }
                followedNames[name]?.waiting.append(done)
            }
        }
        let rule = DBusMatchRule(
            sender: Self.bus, path: Self.busPath, interface: Self.bus, member: "NameOwnerChanged", arg0: name)
        do {
            _ = try await subscribe(to: rule) { [weak self] signal in
                guard signal.arguments.count == 3, let owner = signal.arguments[2].string else { return }
                self?.ownerChanged(name, to: owner.isEmpty ? nil : owner)
            }
        } catch {
            _ = try? await onLoop { [self] in followedNames[name] = nil }
            throw error
        }
        // Asked on the loop thread once the match rule is in place, so the answer is ordered with the
        // signals that follow it: whichever arrives last is the newest.
        let query = try DBusMessage.methodCall(destination: Self.bus, path: Self.busPath, interface: Self.bus, member: "GetNameOwner")
        try query.append([.string(name)])
        try await onLoopAsync { [self] done in
            sendWithReply(query, timeout: -1) { [self] result in
                var owner: String?
                if case .success(let reply) = result, !reply.isError { owner = (try? reply.arguments())?.first?.string }
                ownerChanged(name, to: owner)
                let waiting = followedNames[name]?.waiting ?? []
                followedNames[name]?.known = true
                followedNames[name]?.waiting = []
                done()
                for waiter in waiting { waiter() }
            }
        }
    }

    /// Records the new owner, then tells the watchers; loop thread only.
    private func ownerChanged(_ name: String, to owner: String?) {
        state.withLock { $0.nameOwners[name] = owner }
        guard let watchers = followedNames[name]?.watchers else { return }
        for (_, watcher) in watchers.sorted(by: { $0.key < $1.key }) { watcher(owner) }
    }
}

/// A running ``DBusConnection/watchNameOwner(_:handler:)``; cancel it to stop the calls.
public struct DBusNameWatch: Sendable {
    let connection: DBusConnection
    let name: String
    let id: UInt64

    public func cancel() async {
        await connection.stopWatching(name, id: id)
    }
}
