import Bluetooth
import DBus

/// An LE discovery session on one adapter (`Adapter1.SetDiscoveryFilter` + `StartDiscovery`), following the
/// remote devices BlueZ reports while it runs.
///
/// A device counts as seen in this session when BlueZ announces it (`InterfacesAdded`) or reports a fresh
/// advertisement of it (`RSSI`, data or name changes) after the session started, or when it already had an
/// RSSI at the start (another client is scanning and heard it). Cached devices that match the query, are
/// not connected and carry no pairing are forgotten (`RemoveDevice`) before scanning, so that what is
/// recorded is the device's advertisement now and not data BlueZ kept from earlier scans.
public final class DeviceDiscovery: Sendable {
    public let adapter: Adapter
    private let signals: SubscriptionSet
    private let state = Watched(State())

    struct State: Sendable {
        var devices: [DBusObjectPath: DeviceProperties] = [:]
        var seen: Set<DBusObjectPath> = []
        /// Devices past ``maximumDevices``, ignored.
        var ignored = 0
        /// Cached devices removed before the scan.
        var forgotten: [DBusObjectPath] = []
        /// Counts the changes a search can see: a device seen or removed, a seen device's name or address changed
        /// (``DeviceQuery`` matches on nothing else); ``find(_:timeout:settle:)`` waits for it to move.
        var revision = 0
    }

    /// Devices followed at most; a crowded place (or a hostile bluetoothd) does not grow this without end.
    public static let maximumDevices = 512

    private init(adapter: Adapter) {
        self.adapter = adapter
        signals = SubscriptionSet(adapter.stack.connection)
    }

    /// Starts following devices, forgets stale cached ones matching `query`, sets an LE filter and starts
    /// discovery (powering the adapter on first if it is off).
    public static func start(on adapter: Adapter, forgetting query: DeviceQuery? = nil) async throws(CentralError) -> DeviceDiscovery {
        let discovery = DeviceDiscovery(adapter: adapter)
        do {
            try await discovery.begin(forgetting: query)
        } catch {
            await discovery.signals.cancel()
            throw error
        }
        return discovery
    }

    private func begin(forgetting query: DeviceQuery?) async throws(CentralError) {
        let adapterPath = adapter.path
        let state = self.state
        try await signals.add(SubscriptionSet.interfacesAdded) { signal in
            guard let (path, properties) = signal.addedInterface(BlueZNames.device), path.isDescendant(of: adapterPath) else { return }
            state.update { state in
                if state.devices[path] == nil, state.devices.count >= Self.maximumDevices {
                    state.ignored += 1
                    return
                }
                var device = state.devices[path] ?? DeviceProperties(path: path)
                device.apply(changed: properties, invalidated: [])
                state.devices[path] = device
                state.seen.insert(path)
                state.revision += 1
            }
        }
        try await signals.add(SubscriptionSet.interfacesRemoved) { signal in
            guard let path = signal.removedInterface(BlueZNames.device) else { return }
            state.update { state in
                guard state.devices.removeValue(forKey: path) != nil else { return }
                state.seen.remove(path)
                state.revision += 1
            }
        }
        try await signals.add(SubscriptionSet.propertiesChanged(below: adapterPath, interface: BlueZNames.device)) { signal in
            guard let (changed, invalidated) = signal.changedProperties else { return }
            state.update { state in
                guard var device = state.devices[signal.path] else { return }
                let before = (device.name, device.address)
                device.apply(changed: changed, invalidated: invalidated)
                state.devices[signal.path] = device
                let newlySeen = DeviceProperties.isAdvertisement(changed.keys) && state.seen.insert(signal.path).inserted
                if newlySeen || (state.seen.contains(signal.path) && (before.0 != device.name || before.1 != device.address)) {
                    state.revision += 1
                }
            }
        }
        let objects: [DBusObjectPath: [String: [String: DBusValue]]]
        do {
            objects = try await adapter.stack.managedObjects()
        } catch {
            throw .stack(error)
        }
        var stale: [DBusObjectPath] = []
        state.update { state in
            for (path, interfaces) in objects where path.isDescendant(of: adapterPath) {
                guard let properties = interfaces[BlueZNames.device], state.devices[path] == nil else { continue }
                guard state.devices.count < Self.maximumDevices else {
                    state.ignored += 1
                    continue
                }
                let device = DeviceProperties(path: path, properties: properties)
                if let query, query.matches(device), !device.connected, !device.paired, !device.bonded, !device.trusted {
                    stale.append(path)
                    continue
                }
                state.devices[path] = device
                if device.rssi != nil { state.seen.insert(path) }
            }
        }
        for path in stale.sorted() {
            // Gone from our view now; BlueZ announces it again (InterfacesAdded) when it hears it.
            _ = try? await call(adapter.path, BlueZNames.adapter, "RemoveDevice", [.objectPath(path)], what: "cannot forget \(path)")
            state.update { $0.forgotten.append(path) }
        }
        if !adapter.powered {
            do throws(BlueZError) { try await adapter.powerOn() } catch { throw .stack(error) }
        }
        try await call(
            adapter.path, BlueZNames.adapter, "SetDiscoveryFilter",
            [
                .stringVariantDictionary([
                    "Transport": .string("le"), "DuplicateData": .boolean(true),
                ])
            ], what: "cannot set an LE discovery filter on \(adapter.name)")
        try await call(adapter.path, BlueZNames.adapter, "StartDiscovery", [], what: "cannot start discovery on \(adapter.name)")
    }

    private func call(_ path: DBusObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue], what: String)
        async throws(CentralError)
    {
        do {
            _ = try await adapter.stack.connection.call(
                destination: BlueZNames.service, path: path, interface: interface, member: member, arguments: arguments,
                timeout: .seconds(10))
        } catch {
            throw .call(what, error)
        }
    }

    /// The devices seen in this session so far.
    public var seenDevices: [DeviceProperties] {
        let state = self.state.value
        return state.seen.compactMap { state.devices[$0] }.sorted { $0.path < $1.path }
    }

    /// Cached devices forgotten before the scan.
    public var forgottenDevices: [DBusObjectPath] { state.value.forgotten }

    /// Waits for the one device matching `query`.
    ///
    /// Once a match is seen, discovery goes on for `settle` (within `timeout`) so that the scan response can
    /// arrive and a second device of the same name can show up: more than one match then throws
    /// ``CentralError/ambiguous(_:matches:)``; none within `timeout` throws ``CentralError/deviceNotFound(_:adapter:scanned:seen:)``.
    public func find(_ query: DeviceQuery, timeout: Duration, settle: Duration = .seconds(2)) async throws(CentralError) -> DeviceProperties
    {
        let start = ContinuousClock.now
        let deadline = start + timeout
        var decideAt: ContinuousClock.Instant?
        while true {
            let now = ContinuousClock.now
            let revision = state.value.revision  // before the look: a change after it ends the wait below
            let matches = seenDevices.filter(query.matches)
            if !matches.isEmpty, decideAt == nil { decideAt = min(now + settle, deadline) }
            // A device can vanish (InterfacesRemoved) during the settle time: then the search goes on.
            if !matches.isEmpty, let decideAt, now >= decideAt {
                if matches.count == 1 { return matches[0] }
                throw .ambiguous(query, matches: matches.sorted { ($0.address?.description ?? "") < ($1.address?.description ?? "") })
            }
            if matches.isEmpty, now >= deadline {
                throw .deviceNotFound(query, adapter: adapter.name, scanned: now - start, seen: seenDevices.count)
            }
            // Until a device is seen, goes or changes its name, or it is time to decide: bluetoothd's signals wake it.
            _ = await state.wait(until: matches.isEmpty ? deadline : (decideAt ?? deadline)) { $0.revision != revision }
            if Task.isCancelled { throw .deviceNotFound(query, adapter: adapter.name, scanned: now - start, seen: 0) }
        }
    }

    /// The latest properties of the device at `path`, if followed.
    public func device(at path: DBusObjectPath) -> DeviceProperties? { state.value.devices[path] }

    /// Stops discovery (`StopDiscovery`) and the signals.
    public func stop() async {
        _ = try? await call(adapter.path, BlueZNames.adapter, "StopDiscovery", [], what: "cannot stop discovery")
        await signals.cancel()
    }
}
