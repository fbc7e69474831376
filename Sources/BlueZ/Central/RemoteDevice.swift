import Bluetooth
import DBus
import TextEscaping

/// A remote peripheral (`org.bluez.Device1`) this machine connects to as a central: connect, wait for its
/// services, disconnect, forget; its properties are followed from bluetoothd's signals and published
/// (``link``): what waits for the link waits for those signals (``wait(until:for:)``), it does not poll.
public final class RemoteDevice: Sendable {
    public let path: DBusObjectPath
    public let adapter: Adapter
    private let signals: SubscriptionSet
    private let current: Watched<Snapshot>

    /// The device as bluetoothd last said: its properties, and whether it removed the device object.
    public struct Snapshot: Sendable, Equatable {
        public var properties: DeviceProperties
        public var gone = false

        /// Connected, and its services resolved.
        public var isReady: Bool { properties.connected && properties.servicesResolved && !gone }
        /// Not connected, or removed.
        public var isDown: Bool { !properties.connected || gone }
    }

    private init(_ device: DeviceProperties, adapter: Adapter) {
        path = device.path
        self.adapter = adapter
        signals = SubscriptionSet(adapter.stack.connection)
        current = Watched(Snapshot(properties: device))
    }

    /// Starts following `device` (found by a ``DeviceDiscovery`` of `adapter`).
    public static func follow(_ device: DeviceProperties, adapter: Adapter) async throws(CentralError) -> RemoteDevice {
        let remote = RemoteDevice(device, adapter: adapter)
        let current = remote.current
        let path = device.path
        do {
            try await remote.signals.add(SubscriptionSet.propertiesChanged(below: path, interface: BlueZNames.device)) { signal in
                guard signal.path == path, let (changed, invalidated) = signal.changedProperties else { return }
                current.update { $0.properties.apply(changed: changed, invalidated: invalidated) }
            }
            try await remote.signals.add(SubscriptionSet.interfacesRemoved) { signal in
                guard signal.removedInterface(BlueZNames.device) == path else { return }
                current.update {
                    $0.gone = true
                    $0.properties.connected = false
                    $0.properties.servicesResolved = false
                }
            }
            try await remote.refresh()
        } catch let error as CentralError {
            await remote.signals.cancel()
            throw error
        } catch {
            await remote.signals.cancel()
            throw .call("cannot read the properties of \(path)", error as? DBusError ?? .disconnected)
        }
        return remote
    }

    /// The device's properties now.
    public var properties: DeviceProperties { current.value.properties }

    /// Whether bluetoothd removed the device object.
    public var isGone: Bool { current.value.gone }

    /// The device now: properties and whether it is gone.
    public var link: Snapshot { current.value }

    /// Waits until `condition` holds for the device (woken by bluetoothd's signals, not by polling); the device
    /// then, or nil when `deadline` passed or the task was cancelled first.
    public func wait(until deadline: ContinuousClock.Instant? = nil, for condition: @escaping @Sendable (Snapshot) -> Bool) async
        -> Snapshot?
    {
        await current.wait(until: deadline, for: condition)
    }

    /// `AA:BB:CC:DD:EE:FF`, or the object path when BlueZ gave no address.
    public var label: String { current.value.properties.address?.description ?? path.rawValue }

    /// Connects and waits until BlueZ has resolved the services, trying up to `attempts` times (only setting up
    /// the connection is retried: LE connection setup fails now and then on busy radios); returns the attempt
    /// that succeeded. Each attempt has `timeout` for `Connect` and as much again for the services.
    @discardableResult
    public func connect(timeout: Duration, attempts: Int = 1, onRetry: @Sendable (Int, String) -> Void = { _, _ in })
        async throws(CentralError) -> Int
    {
        var reason = "no attempt made"
        for attempt in 1...max(1, attempts) {
            if attempt > 1 { onRetry(attempt, reason) }
            do {
                _ = try await adapter.stack.connection.call(
                    destination: BlueZNames.service, path: path, interface: BlueZNames.device, member: "Connect", timeout: timeout)
            } catch  where error.name == "org.bluez.Error.AlreadyConnected" {
                // Connected already (by us or another client): wait for the services below.
            } catch {
                if isGone { throw .connectFailed(address: label, reason: "bluetoothd removed the device") }
                reason = TerminalText.escaped(error.description, limit: 200)
                await disconnect(wait: .seconds(2))
                continue
            }
            // `Connected` may be announced just after the reply: a grace period before "not connected" counts, and
            // then bluetoothd is asked (its signal can be seconds late on a loaded machine: taking that for a lost link
            // dropped links that were up, and a device that starts a session per connection saw a new one).
            var connectedBy = ContinuousClock.now + .seconds(2)
            let end = ContinuousClock.now + timeout
            while ContinuousClock.now < end, !Task.isCancelled {
                let device = current.value
                if device.isReady { return attempt }
                if device.gone { break }
                if !device.properties.connected, ContinuousClock.now >= connectedBy {
                    guard (try? await refresh()) != nil, current.value.properties.connected else { break }
                    connectedBy = ContinuousClock.now + .seconds(2)
                    continue
                }
                // Until something that decides it changes: ready, removed, or the link going up or down.
                let connected = device.properties.connected
                _ = await current.wait(until: connected ? end : min(end, connectedBy)) {
                    $0.isReady || $0.gone || $0.properties.connected != connected
                }
            }
            reason =
                current.value.gone
                ? "bluetoothd removed the device"
                : current.value.properties.connected
                    ? "services not resolved within \(timeout.wholeSeconds) s"
                    : "disconnected before its services were resolved"
            await disconnect(wait: .seconds(2))
        }
        throw .connectFailed(address: label, reason: reason + (attempts > 1 ? " (\(attempts) attempts)" : ""))
    }

    /// Reads the device's properties (`GetAll`) into ``properties``.
    private func refresh() async throws(DBusError) {
        let reply = try await adapter.stack.connection.call(
            destination: BlueZNames.service, path: path, interface: BlueZNames.properties, member: "GetAll",
            arguments: [.string(BlueZNames.device)], timeout: .seconds(10))
        if let properties = reply.first?.stringKeyedDictionary {
            current.update { $0.properties.apply(changed: properties, invalidated: []) }
        }
    }

    /// Disconnects (`Disconnect`) and waits up to `wait` for BlueZ to say so; errors are ignored.
    public func disconnect(wait: Duration = .seconds(5)) async {
        _ = try? await adapter.stack.connection.call(
            destination: BlueZNames.service, path: path, interface: BlueZNames.device, member: "Disconnect", timeout: .seconds(10))
        _ = await current.wait(until: ContinuousClock.now + wait) { $0.isDown }
    }

    /// Removes the device from the adapter (`RemoveDevice`): its cache, and any pairing made meanwhile.
    public func forget() async {
        _ = try? await adapter.stack.connection.call(
            destination: BlueZNames.service, path: adapter.path, interface: BlueZNames.adapter, member: "RemoveDevice",
            arguments: [.objectPath(path)], timeout: .seconds(10))
    }

    /// Stops following the device.
    public func stop() async {
        await signals.cancel()
    }
}
