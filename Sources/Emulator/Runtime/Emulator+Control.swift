import BlueZ
import Bluetooth
import Profile

/// Why a control request could not be carried out; `kind` maps to an HTTP status.
public struct ControlFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable { case notFound, invalid, conflict, unavailable }
    public var kind: Kind
    public var message: String
    /// Extra fields for the JSON error body (e.g. `known`: the valid names).
    public var details: [String: [String]]

    public init(_ kind: Kind, _ message: String, details: [String: [String]] = [:]) {
        self.kind = kind
        self.message = message
        self.details = details
    }

    public var description: String { message }
}

extension Emulator {
    /// The event log this emulator writes to.
    public nonisolated var events: EventLog { log.shared }

    /// The emulator now: adapter, advertising, centrals, GATT table with values, variables, timers, faults.
    public func status() -> EmulatorStatus {
        let initial = profile.initialState
        let centrals = centrals.connected.map { address -> EmulatorStatus.Central in
            let id = CentralID(address: address)
            let own =
                profile.connectionState.isEmpty
                ? nil
                : Dictionary(
                    uniqueKeysWithValues: profile.connectionState.map { name in
                        (name, (engine.connectionStates[id]?[name] ?? initial[name])?.statusText ?? "")
                    })
            return EmulatorStatus.Central(
                address: address, mtu: self.centrals.mtu(of: address)?.rawValue,
                subscriptions: engine.subscribers.filter { $0.value.contains(id) }.keys.sorted(), state: own)
        }
        let advertisements = engine.advertisements().map(ProfileMapping.advertisement)
        let budgets = advertisements.map { budget(of: $0) }
        return EmulatorStatus(
            profile: profile.file,
            deviceName: engine.deviceName(),
            adapter: adapter.map {
                EmulatorStatus.Adapter(
                    name: $0.name, address: $0.address, alias: engine.deviceName() ?? $0.alias,
                    privateAddresses: address.key != nil)
            },
            advertising: EmulatorStatus.Advertising(
                advertised: !self.advertisements.isEmpty, wanted: engine.isAdvertising, variant: engine.advertisementVariant,
                variants: Set(profile.advertisements.flatMap(\.variants.keys)).sorted(),
                advertisements: advertisements, descriptions: zip(advertisements, budgets).map { Self.describe($0, budget: $1) },
                budgets: budgets),
            centrals: centrals,
            services: gattTable(),
            variables: engine.variables,
            state: engine.state,
            values: namedValues(),
            timers: engine.activeTimers.sorted(),
            triggers: profile.triggers.map(\.name),
            triggerDescriptions: Dictionary(
                profile.triggers.compactMap { trigger in trigger.description.map { (trigger.name, $0) } },
                uniquingKeysWith: { first, _ in first }),
            faults: faults(),
            faultPresets: profile.faults,
            lastEvent: log.lastSequence, firmware: profile.firmware != nil)
    }

    /// The GATT table with current values and the handles bluetoothd assigned.
    func gattTable() -> [EmulatorStatus.Service] {
        profile.services.filter { !absentServices.contains($0.id) }.map { service in
            EmulatorStatus.Service(
                id: service.id, uuid: service.uuid, primary: service.primary, handle: application?.serviceHandle(service.id),
                characteristics: service.characteristics.map { characteristic in
                    EmulatorStatus.Characteristic(
                        id: characteristic.id, uuid: characteristic.uuid, flags: characteristic.flags,
                        handle: application?.handle(characteristic.id),
                        value: engine.value(of: characteristic.id),
                        maxLength: characteristic.maxLength ?? ATTMTU.maximumValueLength,
                        descriptors: characteristic.descriptors.map { descriptor in
                            EmulatorStatus.Descriptor(
                                id: descriptor.id.isEmpty ? nil : descriptor.id, uuid: descriptor.uuid, flags: descriptor.flags,
                                value: profile.descriptorValue(descriptor, environment: engine.environment))
                        })
                })
        }
    }

    /// Every variable and state value with its kind and type.
    func namedValues() -> [EmulatorStatus.NamedValue] {
        let variables = profile.variables.map { named in
            EmulatorStatus.NamedValue(
                name: named.name, isState: false, value: engine.variables[named.name] ?? named.value, perCentral: false)
        }
        let state = profile.state.map { named in
            EmulatorStatus.NamedValue(
                name: named.name, isState: true, value: engine.state[named.name] ?? named.value,
                perCentral: profile.connectionState.contains(named.name))
        }
        return variables + state
    }

    /// Sets a variable or state value; its type must be the profile's (409 otherwise). Advertisements that
    /// depend on it are re-registered. Returns the value as the status shows it.
    public func setVariable(_ name: String, to value: VariableValue) async throws(ControlFailure) -> String {
        guard let declared = (profile.variables + profile.state).first(where: { $0.name == name }) else {
            throw ControlFailure(
                .notFound, "unknown variable or state value \"\(name)\"",
                details: ["known": (profile.variables + profile.state).map(\.name)])
        }
        let newValue: ProfileValue
        switch (declared.value, value) {
        case (.number, .integer(let number)): newValue = .number(number)
        case (.string, .string(let text)): newValue = .string(text)
        case (.bool, .bool(let flag)): newValue = .bool(flag)
        case (.bytes, .bytes(let bytes)):
            guard bytes.count <= ATTMTU.maximumValueLength else {
                throw ControlFailure(.conflict, "value too long: \(bytes.count) bytes (at most \(ATTMTU.maximumValueLength))")
            }
            newValue = .bytes(bytes)
        case (.number, .string(let text)) where Int(text) != nil: newValue = .number(Int(text) ?? 0)
        case (.string, .integer(let number)): newValue = .string(String(number))
        case (.string, .bool(let flag)): newValue = .string(String(flag))
        default:
            throw ControlFailure(
                .conflict,
                "\"\(name)\" is a \(declared.value.kind.rawValue) value"
                    + (declared.value.kind == .bytes ? ": give {\"hex\": \"…\"}" : ""))
        }
        log.record(.note, detail: "control: \(name) = \(newValue.statusText)")
        for effect in engine.setNamedValue(name, to: newValue) {
            await perform(effect, central: latestCentral)
        }
        return newValue.statusText
    }

    /// Sends a notification or indication of `value` to every subscriber, through the fault engine.
    public func notify(characteristic id: CharacteristicID, value: [UInt8], indicate: Bool) async throws(ControlFailure) {
        let definition = try characteristic(id)
        let flag: CharacteristicFlag = indicate ? .indicate : .notify
        guard definition.has(flag) else {
            throw ControlFailure(.conflict, "characteristic \"\(id)\" has no \(flag.rawValue) flag")
        }
        log.record(.note, characteristic: id, detail: "control: \(indicate ? "indicate" : "notify")")
        engine.store(value, for: id)
        await perform(
            .notify(characteristic: id, value: value, target: .allSubscribers, indicate: indicate),
            central: latestCentral)
    }

    /// Replaces a characteristic's stored value without notifying.
    public func setValue(characteristic id: CharacteristicID, value: [UInt8]) throws(ControlFailure) {
        _ = try characteristic(id)
        engine.store(value, for: id)
        application?.setValue(id, value: value)
        log.record(.note, characteristic: id, value: value, detail: "control: value set")
    }

    /// Fires a named trigger; unknown names are refused (with the known ones).
    public func fireTrigger(_ name: String, arguments: [String: String]) async throws(ControlFailure) {
        guard profile.triggers.contains(where: { $0.name == name }) else {
            throw ControlFailure(.notFound, "unknown trigger \"\(name)\"", details: ["known": profile.triggers.map(\.name)])
        }
        await fire(trigger: name, arguments: arguments)
    }

    /// Installs a fault after checking it against the profile; `on: start` faults are scheduled at once.
    @discardableResult
    public func addFault(_ spec: FaultSpec) throws(FaultSpecError) -> ActiveFault {
        if let problem = profile.problem(with: spec) { throw problem }
        let fault = try faultState.engine.add(spec)
        log.record(.note, detail: "fault \(fault.id) installed: on \(spec.on.rawValue) \(spec.action.summary)")
        if spec.on == .channel {
            updateChannelDeferral()
            updateHeldRefusals()
        }
        if spec.on == .start {
            let id = fault.id
            faultState.scheduled[id] = Task(executorPreference: loop) { [weak self] in
                try? await Task.sleep(for: .milliseconds(spec.scope.afterMilliseconds))
                guard !Task.isCancelled else { return }
                await self?.fireStartFault(id)
            }
        }
        return fault
    }

    func fireStartFault(_ id: String) async {
        faultState.scheduled[id] = nil
        guard let fired = faultState.engine.fireStart(id: id) else { return }
        log.record(.fault, detail: fired.detail)
        await performAdapterAction(fired.action)
    }

    public func faults() -> [ActiveFault] { faultState.engine.faults }

    /// Removes one fault; false when there is none with that id.
    public func removeFault(id: String) -> Bool {
        faultState.scheduled.removeValue(forKey: id)?.cancel()
        let removed = faultState.engine.remove(id: id)
        if removed {
            log.record(.note, detail: "fault \(id) removed")
            updateChannelDeferral()
            updateHeldRefusals()
        }
        return removed
    }

    /// Removes every fault and ends a `silence` under way (advertising resumes); notifications held back for
    /// reordering are sent now. Returns how many were removed.
    @discardableResult
    public func clearFaults() async -> Int {
        for task in faultState.scheduled.values { task.cancel() }
        faultState.scheduled = [:]
        let count = faultState.engine.faults.count
        let held = faultState.engine.removeAll()
        log.record(.note, detail: "faults cleared (\(count))")
        updateChannelDeferral()
        updateHeldRefusals()
        await endSilences()
        for (characteristic, value) in held {
            let indicate = profile.characteristic(characteristic).map { !$0.has(.notify) && $0.has(.indicate) } ?? false
            await pipeline.delivery.send(
                OutgoingNotification(characteristic: characteristic, value: value, target: .allSubscribers, indicate: indicate), in: self)
        }
        return count
    }

    /// Disconnects a connected central.
    public func disconnect(central address: BluetoothAddress) async throws(ControlFailure) {
        guard centrals.isConnected(address) else {
            throw ControlFailure(
                .notFound, "central \(address) is not connected", details: ["connected": centrals.connected.map(\.description)])
        }
        log.record(.note, central: address, detail: "control: disconnect")
        do {
            try await adapter?.disconnect(central: address)
        } catch {
            throw ControlFailure(.unavailable, "bluetoothd could not disconnect \(address): \(error.description)")
        }
    }

    /// Switches the advertisement variant (nil: base).
    public func setAdvertisement(variant: String?) async throws(ControlFailure) {
        let known = Set(profile.advertisements.flatMap(\.variants.keys)).sorted()
        if let variant, !known.contains(variant) {
            throw ControlFailure(.notFound, "unknown advertisement variant \"\(variant)\"", details: ["known": known])
        }
        for effect in engine.switchAdvertisement(to: variant) {
            await perform(effect, central: latestCentral)
        }
    }

    /// Puts the behaviour engine back to the profile's initial state (connections and subscriptions kept),
    /// cancels timers, republishes values and advertisements. Faults are kept (clear them separately).
    public func reset() async {
        for timer in timers.values { timer.task.cancel() }
        timers = [:]
        let wasAdvertising = engine.isAdvertising
        engine.resetKeepingConnections()
        for characteristic in profile.characteristics {
            application?.setValue(characteristic.id, value: engine.value(of: characteristic.id))
        }
        log.record(.note, detail: "control: reset to the profile's initial state")
        for effect in engine.started() { await perform(effect, central: latestCentral) }
        if !wasAdvertising, faultState.silencedUntilResume == 0 { await resumeAdvertising() }
        await refreshAdvertisements()
    }

    private func characteristic(_ id: CharacteristicID) throws(ControlFailure) -> CharacteristicDefinition {
        guard let definition = profile.characteristic(id) else {
            let hint = profile.idHint(forUUID: id.rawValue).map { " (\($0))" } ?? ""
            throw ControlFailure(
                .notFound, "unknown characteristic \"\(id)\"\(hint)", details: ["known": profile.characteristics.map(\.id.rawValue)])
        }
        return definition
    }
}

extension ProfileValue {
    /// Numbers and booleans as JSON-ish text, strings as themselves, bytes as hex.
    public var statusText: String {
        switch self {
        case .number(let n): String(n)
        case .bool(let b): String(b)
        case .string(let s): s
        case .bytes(let b): b.hexString()
        }
    }
}

extension Emulator {
    /// Adds a service of the profile to the GATT table or removes it: the application is registered again with
    /// the services present, and bluetoothd tells connected (and, on reconnection, bonded) centrals that
    /// subscribed to it with Service Changed. Returns whether anything changed.
    @discardableResult
    public func setService(_ id: String, present: Bool) async throws(ControlFailure) -> Bool {
        guard profile.services.contains(where: { $0.id == id }) else {
            throw ControlFailure(.notFound, "unknown service \"\(id)\"", details: ["known": profile.services.map(\.id)])
        }
        guard absentServices.contains(id) == present else { return false }
        var absent = absentServices
        if present { absent.remove(id) } else { absent.insert(id) }
        try await changeTable(absent: absent, change: "service \(id) \(present ? "added" : "removed")")
        return true
    }

    /// Registers the GATT table again with the services of `absent` left out, or keeps the table it had when
    /// bluetoothd refuses the new one (and throws, saying so). `change` says what changed, for the event log (an
    /// event of `kind`).
    func changeTable(absent: Set<String>, change: String, kind: EmulatorEventKind = .note) async throws(ControlFailure) {
        let previous = absentServices
        absentServices = absent
        guard let adapter, let stack, tableRegistered, !stackLost else {
            log.record(kind, detail: "\(change) (the GATT table follows once registered with bluetoothd)")
            return
        }
        await unregisterApplication()
        do {
            try await registerApplication(adapter: adapter, stack: stack)
        } catch {
            // Never leave the device half-gone: the table it had goes back.
            absentServices = previous
            let restored: String
            do {
                try await registerApplication(adapter: adapter, stack: stack)
                restored = "the previous GATT table registered again"
            } catch let again {
                restored = "registering the previous GATT table again failed too: \(again.description)"
            }
            let reason = "registering the GATT table again failed: \(error.description); \(restored)"
            log.record(.error, detail: "the GATT table did not change (\(change)): \(reason)")
            throw ControlFailure(.unavailable, reason)
        }
        log.record(
            kind,
            detail: application == nil
                ? "\(change): no service left, so no GATT application registered"
                : "\(change): GATT table registered again; bluetoothd sends Service Changed")
    }
}
