import Bluetooth
import DBus
import TextEscaping

/// A remote peripheral (`org.bluez.Device1`) this machine connects to as a central: connect, wait for its
/// services, disconnect, forget; its properties are followed from bluetoothd's signals.
public final class RemoteDevice: Sendable {
    public let path: DBusObjectPath
    public let adapter: Adapter
    private let signals: SubscriptionSet
    private let current: Locked<DeviceProperties>
    private let gone = Locked(false)

    private init(_ device: DeviceProperties, adapter: Adapter) {
        path = device.path
        self.adapter = adapter
        signals = SubscriptionSet(adapter.stack.connection)
        current = Locked(device)
    }

    /// Starts following `device` (found by a ``DeviceDiscovery`` of `adapter`).
    public static func follow(_ device: DeviceProperties, adapter: Adapter) async throws(CentralError) -> RemoteDevice {
        let remote = RemoteDevice(device, adapter: adapter)
        let current = remote.current
        let gone = remote.gone
        let path = device.path
        do {
            try await remote.signals.add(SubscriptionSet.propertiesChanged(below: path, interface: BlueZNames.device)) { signal in
                guard signal.path == path, let (changed, invalidated) = signal.changedProperties else { return }
                current.withLock { $0.apply(changed: changed, invalidated: invalidated) }
            }
            try await remote.signals.add(SubscriptionSet.interfacesRemoved) { signal in
                guard signal.removedInterface(BlueZNames.device) == path else { return }
                gone.withLock { $0 = true }
                current.withLock {
                    $0.connected = false
                    $0.servicesResolved = false
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
    public var properties: DeviceProperties { current.value }

    /// Whether bluetoothd removed the device object.
    public var isGone: Bool { gone.value }

    /// `AA:BB:CC:DD:EE:FF`, or the object path when BlueZ gave no address.
    public var label: String { current.value.address?.description ?? path.rawValue }

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
            while ContinuousClock.now < end {
                let device = current.value
                if device.connected, device.servicesResolved { return attempt }
                if !device.connected, ContinuousClock.now >= connectedBy {
                    guard (try? await refresh()) != nil, current.value.connected else { break }
                    connectedBy = ContinuousClock.now + .seconds(2)
                }
                try? await Task.sleep(for: .milliseconds(25))
            }
            reason =
                current.value.connected
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
            current.withLock { $0.apply(changed: properties, invalidated: []) }
        }
    }

    /// Disconnects (`Disconnect`) and waits up to `wait` for BlueZ to say so; errors are ignored.
    public func disconnect(wait: Duration = .seconds(5)) async {
        _ = try? await adapter.stack.connection.call(
            destination: BlueZNames.service, path: path, interface: BlueZNames.device, member: "Disconnect", timeout: .seconds(10))
        let end = ContinuousClock.now + wait
        while current.value.connected, !isGone, ContinuousClock.now < end {
            try? await Task.sleep(for: .milliseconds(25))
        }
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
