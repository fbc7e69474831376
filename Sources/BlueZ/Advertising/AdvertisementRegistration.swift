import DBus
import Synchronization

/// An advertisement registered with `org.bluez.LEAdvertisingManager1`: the handle of its lifetime.
///
/// ``update(_:)`` changes it in place (BlueZ refreshes on `PropertiesChanged`); ``unregister()`` removes it.
public final class AdvertisementRegistration: Sendable {
    public let path: DBusObjectPath
    public let adapterPath: DBusObjectPath
    /// The adapter as read when it was registered: its advertising limits.
    let adapter: Adapter
    let stack: BlueZStack
    private let current: Locked<Advertisement>
    private let state = Mutex(Lifecycle())
    private let onRelease: @Sendable () -> Void

    enum Phase { case registered, released, unregistered }

    private struct Lifecycle {
        var phase = Phase.registered
        /// When ``update(_:)`` last told bluetoothd of new contents.
        var lastUpdate: ContinuousClock.Instant?
        var settle = AdvertisementRegistration.refreshSettle
    }

    /// How long after an update ``unregister()`` waits before it unregisters: bluetoothd 5.66 answers the update's
    /// `PropertiesChanged` with a management command whose reply goes to the advertisement's client, and does not
    /// cancel it when the client is unregistered (src/advertising.c: `properties_changed` calls
    /// `refresh_advertisement(client, NULL, NULL)`, so `client_free` has no id to cancel); unregistering before the
    /// reply frees the client under it, and bluetoothd crashed (the sandbox: gattemu stopped 20 ms after a rule
    /// changed its advertisement). The reply takes milliseconds, up to a few hundred on a loaded machine.
    public static let refreshSettle: Duration = .milliseconds(500)

    /// How long ``unregister()`` waits after an update: ``refreshSettle``; tests make it long enough to tell apart.
    var settle: Duration {
        get { state.withLock { $0.settle } }
        set { state.withLock { $0.settle = newValue } }
    }

    /// Checks the budget, exports the advertisement at `path` and registers it.
    ///
    /// `onRelease` runs when bluetoothd drops the advertisement by itself (`Release`).
    public static func register(
        _ advertisement: Advertisement, adapter: Adapter, stack: BlueZStack,
        path: DBusObjectPath = "/org/gattemu/advertisement0", onRelease: @escaping @Sendable () -> Void = {}
    ) async throws(BlueZError) -> AdvertisementRegistration {
        let budget = AdvertisementBudget(advertisement, limits: adapter.advertising.limits(for: advertisement))
        guard budget.fits else { throw .advertisementTooLarge(budget) }
        let registration = AdvertisementRegistration(
            advertisement, adapter: adapter, stack: stack, path: path, onRelease: onRelease)
        do {
            try await stack.connection.export([registration.interface()], at: path, policy: stack.callerPolicy)
        } catch {
            throw .call("cannot export the advertisement", error)
        }
        do {
            _ = try await stack.connection.call(
                destination: BlueZNames.service, path: adapter.path, interface: BlueZNames.advertisingManager,
                member: "RegisterAdvertisement", arguments: [.objectPath(path), .stringVariantDictionary([:])])
        } catch {
            try? await stack.connection.unexport(path)
            throw .call(Self.refusal(of: advertisement, budget: budget), error)
        }
        return registration
    }

    /// What to say when bluetoothd refuses `advertisement`: with the reason, when it is one gattemu knows.
    static func refusal(of advertisement: Advertisement, budget: AdvertisementBudget) -> String {
        guard advertisement.isExtended, budget.bluetoothdExtendedBytes > AdvertisementBudget.oldBluetoothdExtendedLimit else {
            return "bluetoothd refused the advertisement"
        }
        return "bluetoothd refused the advertisement: this extended set hands it \(budget.bluetoothdExtendedBytes) bytes of "
            + "advertising data (without flags) and scan response, and bluetoothd before 5.87 sends at most "
            + "\(AdvertisementBudget.oldBluetoothdExtendedLimit) (bluez 2a6968b40): shorten the set, or use bluetoothd 5.87 or later"
    }

    private init(
        _ advertisement: Advertisement, adapter: Adapter, stack: BlueZStack, path: DBusObjectPath,
        onRelease: @escaping @Sendable () -> Void
    ) {
        self.path = path
        self.adapterPath = adapter.path
        self.adapter = adapter
        self.stack = stack
        self.current = Locked(advertisement)
        self.onRelease = onRelease
    }

    private func interface() -> DBusInterface {
        let current = self.current
        return DBusInterface(
            name: BlueZNames.advertisement,
            methods: [
                DBusMethod("Release") { [weak self] _ in
                    guard let self else { return [] }
                    let wasRegistered = state.withLock { state in
                        defer { state.phase = .released }
                        return state.phase == .registered
                    }
                    if wasRegistered { onRelease() }
                    return []
                }
            ],
            properties: Advertisement.propertySignatures.map { name, signature in
                DBusProperty(name, signature: signature, get: { current.value.properties[name] })
            })
    }

    public var advertisement: Advertisement { current.value }

    /// Whether bluetoothd still has it (false after `Release` or ``unregister()``).
    public var isRegistered: Bool { state.withLock { $0.phase == .registered } }

    /// Replaces the contents and tells bluetoothd what changed; false when nothing was sent (no change, or
    /// bluetoothd no longer has it). Fails, leaving the old contents, when the new ones do not fit.
    @discardableResult
    public func update(_ advertisement: Advertisement) async throws(BlueZError) -> Bool {
        let budget = AdvertisementBudget(advertisement, limits: adapter.advertising.limits(for: advertisement))
        guard budget.fits else { throw .advertisementTooLarge(budget) }
        let old = current.withLock { current in
            defer { current = advertisement }
            return current
        }
        let before = old.properties
        let after = advertisement.properties
        let changed = after.filter { before[$0.key] != $0.value }
        let removed = before.keys.filter { after[$0] == nil }.sorted()
        guard !changed.isEmpty || !removed.isEmpty else { return false }
        // Stamped before it is sent, under the lock unregister() takes: an unregistering that follows waits.
        let registered = state.withLock { state in
            guard state.phase == .registered else { return false }
            state.lastUpdate = .now
            return true
        }
        guard registered else { return false }
        do {
            try await stack.connection.emitPropertiesChanged(
                path: path, interface: BlueZNames.advertisement, changed: changed, invalidated: removed)
        } catch {
            throw .call("cannot update the advertisement", error)
        }
        return true
    }

    /// Unregisters it from BlueZ (if still registered) and removes the object; within ``refreshSettle`` of an
    /// update, it waits for the rest of it first.
    public func unregister() async {
        let (wasRegistered, lastUpdate, settle) = state.withLock { state in
            defer { state.phase = .unregistered }
            return (state.phase == .registered, state.lastUpdate, state.settle)
        }
        if wasRegistered {
            if let lastUpdate {
                let rest = settle - (ContinuousClock.now - lastUpdate)
                if rest > .zero { try? await Task.sleep(for: rest) }
            }
            _ = try? await stack.connection.call(
                destination: BlueZNames.service, path: adapterPath, interface: BlueZNames.advertisingManager,
                member: "UnregisterAdvertisement", arguments: [.objectPath(path)], timeout: .seconds(5))
        }
        try? await stack.connection.unexport(path)
    }
}
