import BlueZ
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

/// A snapshot of the running emulator for `GET /v1/status`.
public struct EmulatorStatus: Sendable, Equatable, Codable {
    public struct AdapterInfo: Sendable, Equatable, Codable {
        public var name: String
        public var address: String
        public var alias: String?
    }
    public struct AdvertisingInfo: Sendable, Equatable, Codable {
        /// Whether advertisements are registered with bluetoothd right now.
        public var advertised: Bool
        /// Whether the profile wants to advertise (false after a stopAdvertising action).
        public var wanted: Bool
        /// The active variant; nil = base.
        public var variant: String?
        public var variants: [String]
        /// Human descriptions of what is advertised.
        public var advertisements: [String]
    }
    public struct CentralInfo: Sendable, Equatable, Codable {
        public var address: String
        public var mtu: Int?
        public var subscriptions: [String]
        /// The central's own copy of the profile's `connectionState` values; nil when the profile has none.
        public var state: [String: String]?
    }
    public var profile: String
    public var adapter: AdapterInfo?
    public var advertising: AdvertisingInfo
    public var centrals: [CentralInfo]
    public var variables: [String: String]
    public var state: [String: String]
    public var timers: [String]
    public var triggers: [String]
    public var faults: [FaultInfo]
    public var lastEvent: Int
}

/// An installed fault as listed by the control API.
public struct FaultInfo: Sendable, Equatable, Codable {
    public var id: String
    public var on: String
    public var action: String
    public var summary: String
    public var characteristic: String?
    public var central: String?
    public var nth: Int
    public var count: Int?
    public var probability: Double
    public var seed: UInt64?
    public var matched: Int
    public var fired: Int
    public var exhausted: Bool
    public var description: String?

    init(_ fault: ActiveFault) {
        id = fault.id
        on = fault.spec.on.rawValue
        action = fault.spec.action.name
        summary = fault.spec.action.summary
        characteristic = fault.spec.scope.characteristic
        central = fault.spec.scope.central
        nth = fault.spec.scope.nth
        count = fault.spec.scope.count
        probability = fault.spec.scope.probability
        seed = fault.spec.scope.seed
        matched = fault.matched
        fired = fault.fired
        exhausted = fault.exhausted
        description = fault.spec.description
    }
}

extension Emulator {
    /// The event log this emulator writes to.
    public nonisolated var events: EventLog { log }

    public func status() -> EmulatorStatus {
        let initial = profile.initialState
        let centrals = connectedCentrals.map { address in
            let id = CentralID(address: address)
            let own = profile.connectionState.isEmpty ? nil : Dictionary(uniqueKeysWithValues: profile.connectionState.map { name in
                (name, (engine.connectionStates[id]?[name] ?? initial[name])?.statusText ?? "")
            })
            return EmulatorStatus.CentralInfo(
                address: address, mtu: faultState.mtus[address].map(Int.init),
                subscriptions: engine.subscribers.filter { $0.value.contains(id) }.keys.sorted(), state: own)
        }
        return EmulatorStatus(
            profile: profile.file,
            adapter: adapter.map { .init(name: $0.name, address: $0.address, alias: engine.deviceName() ?? $0.alias) },
            advertising: .init(
                advertised: !advertisements.isEmpty, wanted: engine.isAdvertising, variant: engine.advertisementVariant,
                variants: Set(profile.advertisements.flatMap(\.variants.keys)).sorted(),
                advertisements: engine.advertisements().map { Self.describe(ProfileMapping.advertisement($0)) }),
            centrals: centrals,
            variables: engine.variables.mapValues(\.statusText),
            state: engine.state.mapValues(\.statusText),
            timers: engine.activeTimers.sorted(),
            triggers: profile.triggers.map(\.name),
            faults: faultState.engine.faults.map(FaultInfo.init),
            lastEvent: log.lastSequence)
    }

    /// Sends a notification or indication of `value` to every subscriber, through the fault engine.
    public func notify(characteristic id: String, value: [UInt8], indicate: Bool) async throws(ControlFailure) {
        let definition = try characteristic(id)
        let flag: CharacteristicFlag = indicate ? .indicate : .notify
        guard definition.has(flag) else {
            throw ControlFailure(.invalid, "characteristic \"\(id)\" has no \(flag.rawValue) flag")
        }
        log.record(.note, characteristic: id, detail: "control: \(indicate ? "indicate" : "notify")")
        engine.store(value, for: id)
        await perform(.notify(characteristic: id, value: value, target: .allSubscribers, indicate: indicate),
                      central: latestCentral)
    }

    /// Replaces a characteristic's stored value without notifying.
    public func setValue(characteristic id: String, value: [UInt8]) throws(ControlFailure) {
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
    public func addFault(_ spec: FaultSpec) throws(FaultSpecError) -> FaultInfo {
        if let problem = profile.problem(with: spec) { throw problem }
        let fault = try faultState.engine.add(spec)
        log.record(.note, detail: "fault \(fault.id) installed: on \(spec.on.rawValue) \(spec.action.summary)")
        if spec.on == .start {
            let id = fault.id
            faultState.scheduled[id] = Task(executorPreference: loop) { [weak self] in
                try? await Task.sleep(for: .milliseconds(spec.scope.afterMilliseconds))
                guard !Task.isCancelled else { return }
                await self?.fireStartFault(id)
            }
        }
        return FaultInfo(fault)
    }

    func fireStartFault(_ id: String) async {
        faultState.scheduled[id] = nil
        guard let fired = faultState.engine.fireStart(id: id) else { return }
        log.record(.fault, detail: fired.detail)
        await performAdapterAction(fired.action)
    }

    public func faults() -> [FaultInfo] { faultState.engine.faults.map(FaultInfo.init) }

    /// Removes one fault; false when there is none with that id.
    public func removeFault(id: String) -> Bool {
        faultState.scheduled.removeValue(forKey: id)?.cancel()
        let removed = faultState.engine.remove(id: id)
        if removed { log.record(.note, detail: "fault \(id) removed") }
        return removed
    }

    /// Removes every fault; notifications held back for reordering are sent now. Returns how many were removed.
    @discardableResult
    public func clearFaults() async -> Int {
        for task in faultState.scheduled.values { task.cancel() }
        faultState.scheduled = [:]
        let count = faultState.engine.faults.count
        let held = faultState.engine.removeAll()
        log.record(.note, detail: "faults cleared (\(count))")
        for (characteristic, value) in held {
            let indicate = profile.characteristic(characteristic).map { !$0.has(.notify) && $0.has(.indicate) } ?? false
            await deliver(characteristic, value: value, central: nil, indicate: indicate)
        }
        return count
    }

    /// Disconnects a connected central.
    public func disconnect(central address: String) async throws(ControlFailure) {
        guard let connected = connectedCentrals.first(where: { $0.equalsIgnoringCase(address) }) else {
            throw ControlFailure(.notFound, "central \(address) is not connected", details: ["connected": connectedCentrals])
        }
        log.record(.note, central: connected, detail: "control: disconnect")
        do {
            try await adapter?.disconnect(central: connected)
        } catch {
            throw ControlFailure(.unavailable, "bluetoothd could not disconnect \(connected): \(error.description)")
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
        if !wasAdvertising, faultState.silencedUntilResume == 0 { await resumeAdvertising() }
        await refreshAdvertisements()
    }

    private func characteristic(_ id: String) throws(ControlFailure) -> CharacteristicDefinition {
        guard let definition = profile.characteristic(id) else {
            throw ControlFailure(.notFound, "unknown characteristic \"\(id)\"", details: ["known": profile.characteristics.map(\.id)])
        }
        return definition
    }
}

extension ProfileValue {
    /// Numbers and booleans as JSON-ish text, strings as themselves, bytes as hex.
    var statusText: String {
        switch self {
        case .number(let n): String(n)
        case .bool(let b): String(b)
        case .string(let s): s
        case .bytes(let b): b.hexString()
        }
    }
}
