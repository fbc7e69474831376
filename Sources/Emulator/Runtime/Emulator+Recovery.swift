import BlueZ
import DBus
import Profile

/// Recovery: bluetoothd restarts and adapter power cycles drop every registration; gattemu notices,
/// keeps running, and registers again (same alias, behaviour state kept) as soon as the stack is back.
extension Emulator {
    /// Subscribes to what tells us the stack went away or came back.
    func watchStack(_ stack: BlueZStack, adapter: Adapter) async throws(BlueZError) {
        let (changes, continuation) = AsyncStream.makeStream(of: StackChange.self)
        stackChanges = continuation
        Task(executorPreference: loop) { [weak self] in
            for await change in changes { await self?.stackChanged(change) }
        }
        stack.onBluetoothdChange { owner in continuation.yield(owner == nil ? .bluetoothdLost : .bluetoothdBack) }
        do {
            stackSubscriptions.append(
                try await stack.connection.subscribe(
                    to: DBusMatchRule(
                        sender: BlueZNames.service, path: adapter.path, interface: "org.freedesktop.DBus.Properties",
                        member: "PropertiesChanged", arg0: BlueZNames.adapter)
                ) { signal in
                    guard let powered = signal.arguments.dropFirst().first?.stringKeyedDictionary?["Powered"]?.boolean else { return }
                    continuation.yield(powered ? .poweredOn : .poweredOff)
                })
            stackSubscriptions.append(
                try await stack.connection.subscribe(
                    to: DBusMatchRule(
                        sender: BlueZNames.service, interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded")
                ) { signal in
                    guard signal.arguments.first?.objectPath == adapter.path else { return }
                    continuation.yield(.adapterAdded)
                })
            stackSubscriptions.append(
                try await stack.connection.subscribe(
                    to: DBusMatchRule(
                        sender: BlueZNames.service, interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesRemoved")
                ) { signal in
                    guard signal.arguments.first?.objectPath == adapter.path,
                        signal.arguments.dropFirst().first?.arrayElements?.contains(.string(BlueZNames.adapter)) == true
                    else { return }
                    continuation.yield(.adapterRemoved)
                })
        } catch {
            throw .call("cannot watch bluetoothd", error)
        }
    }

    func stackChanged(_ change: StackChange) async {
        guard !stopped else { return }
        switch change {
        case .bluetoothdLost, .adapterRemoved:
            guard !stackLost else { return }
            stackLost = true
            let what = change == .bluetoothdLost ? "org.bluez left the bus" : "the adapter was removed"
            log.record(
                .bluetoothdLost,
                detail: what + ": registrations are gone"
                    + (options.exitOnLoss ? "; exiting (--exit-on-loss)" : "; waiting for it to return"))
            await dropRegistrations()
            if options.exitOnLoss {
                terminationRequests.yield(change == .bluetoothdLost ? "bluetoothd went away" : "the adapter was removed")
            }
        case .bluetoothdBack, .adapterAdded:
            guard stackLost else { return }
            await recover(reason: change == .bluetoothdBack ? "bluetoothd is back" : "adapter reappeared")
        case .poweredOff:
            log.record(.note, detail: "adapter powered off: advertising stops until it is powered on")
        case .poweredOn:
            if stackLost {
                await recover(reason: "adapter powered on")
            } else if faultState.silencedUntilResume == 0, !startingAdvertising,
                advertisements.contains(where: { !$0.isRegistered }) || (advertisements.isEmpty && engine.isAdvertising)
            {
                // While a power cycle of gattemu's own (a fault, an address change) is under way, it advertises
                // again itself when done: two at once exported the same advertisement twice.
                log.record(.note, detail: "adapter powered on: advertising again")
                await stopAdvertising()
                do {
                    try await startAdvertising()
                } catch {
                    log.record(.error, detail: error.description)
                }
            }
        }
    }

    /// Forgets registrations bluetoothd no longer has, and removes their objects so they can be exported again.
    func dropRegistrations() async {
        for timer in timers.values { timer.task.cancel() }
        timers = [:]
        let registrations = advertisements
        advertisements = []
        for registration in registrations { await registration.unregister() }
        await unregisterApplication()
        await unregisterAgent()
        await watcher?.cancel()
        watcher = nil
        for central in centrals.disconnectAll() {
            log.record(.disconnected, central: central, detail: "bluetoothd lost")
        }
    }

    /// Registers everything again; on failure (adapter not there yet) waits for the next stack change.
    ///
    /// One attempt at a time: the actor is re-entered at every `await`, and bluetoothd ≥ 5.7x sends
    /// "bluetoothd back", "adapter added" and "powered on" close together. A second attempt overlapping
    /// the first failed with "… is already exported" and its clean-up then dropped what the first had
    /// just registered, leaving gattemu up but unregistered. An event arriving during an attempt is
    /// covered by that attempt or, if it fails, by the retry it schedules.
    func recover(reason: String) async {
        guard let stack, !recovering else { return }
        recovering = true
        defer { recovering = false }
        do {
            let adapter = try await registerAgain(stack)
            recoveryRetry?.cancel()
            recoveryRetry = nil
            log.record(.bluetoothdBack, detail: "\(reason): registered again on \(adapter.name)")
        } catch {
            await dropRegistrations()
            log.record(.note, detail: "\(reason), but not ready yet (\(error.description)); waiting")
            scheduleRecoveryRetry()
        }
    }

    /// Tries again in a second, at most 60 times in a row, in case no further stack event arrives.
    private func scheduleRecoveryRetry() {
        guard recoveryRetry == nil, stack?.bluetoothdName != nil else { return }
        recoveryRetry = Task(executorPreference: loop) { [weak self] in
            for _ in 0..<60 {
                try? await Task.sleep(for: .seconds(1))
                guard !Task.isCancelled, let self, await self.stackLost else { return }
                await self.retryRecovery()
            }
            if !Task.isCancelled { await self?.recoveryRetryGaveUp() }
        }
    }

    /// After 60 tries the next loss must be able to schedule retries again.
    private func recoveryRetryGaveUp() { recoveryRetry = nil }

    private func retryRecovery() async {
        guard stackLost, !recovering, let stack, stack.bluetoothdName != nil else { return }
        recovering = true
        defer { recovering = false }
        do {
            let adapter = try await registerAgain(stack)
            // Done: a later loss schedules a fresh retry (a finished task left here would block that).
            recoveryRetry?.cancel()
            recoveryRetry = nil
            log.record(.bluetoothdBack, detail: "retry: registered again on \(adapter.name)")
        } catch {
            await dropRegistrations()
        }
    }

    /// Finds the adapter again (by the name or address asked for, else the one used before) and registers on it.
    private func registerAgain(_ stack: BlueZStack) async throws(BlueZError) -> Adapter {
        let adapter = try await stack.adapter(options.adapter ?? self.adapter?.name)
        self.adapter = adapter
        try await register(on: adapter, stack: stack)
        stackLost = false
        return adapter
    }
}

/// What changed in the Bluetooth stack under gattemu.
enum StackChange: Sendable, Equatable {
    case bluetoothdLost, bluetoothdBack, adapterAdded, adapterRemoved, poweredOn, poweredOff
}
