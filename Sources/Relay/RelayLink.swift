import BlueZ
import Bluetooth
import DBus
import Emulator
import Profile
import Replica
import Synchronization
import TextEscaping

/// The relay's link to the real device, as a central on the upstream adapter: forwards what the mirror's
/// centrals do (``RelayUpstream``), hands the device's notifications to the emulator in order, records the
/// conversation, and follows the link: when the device drops or goes away the emulator is told
/// (``Emulator/deviceLost(_:)``) and the link attaches again as soon as the device is back.
public final class RelayLink: RelayUpstream {
    public struct Options: Sendable {
        public var connectTimeout: Duration = .seconds(15)
        /// How long a read or write may wait for the device (ATT's own transaction timeout is 30 s).
        public var operationTimeout: Duration = .seconds(30)
        /// Pause between attempts to reach the device again.
        public var retryInterval: Duration = .seconds(1)
        /// How often the link's state is looked at.
        public var pollInterval: Duration = .milliseconds(100)
        /// Notifications waiting for the emulator at most; past it they are dropped and counted.
        public var notificationQueue = 4096
        /// How the relay answers the device's pairing.
        public var pairing = DevicePairing()
        /// When the last phone leaves the mirror: keep the device's link (default), or drop it and connect again at
        /// once, so that each phone's session meets a freshly connected device (one that resets its session state
        /// when its central disconnects).
        public var reconnectWhenPhonesLeave = false
        /// How long a phone's operation waits for the link being made again (``reconnectWhenPhonesLeave``) before it
        /// is answered `failed`: within bluetoothd's 25 s wait for the mirror's answer.
        public var relinkWait: Duration = .seconds(15)
        /// The shortest time between two remakings of the device's link (``reconnectWhenPhonesLeave``): a central
        /// that connects and leaves in a loop cannot keep the real device's link going down and up.
        public var minimumRelinkInterval: Duration = .seconds(5)

        public init() {}
    }

    /// The device's notifications not yet handed to the emulator, oldest first (at most
    /// ``Options/notificationQueue``), and whether a hand-over is under way.
    private struct Pending: Sendable {
        var queue: [RelayedNotification] = []
        var draining = false
        var emulator: Emulator?
    }

    private struct State: Sendable {
        var device: RemoteDevice?
        var targets: RelayTargets
        var subscriptions: [String: RemoteSubscription] = [:]
        var attached = true
        var droppedNotifications = 0
        /// The last whole value read of each attribute, for the Read Blobs that follow (see ``read(_:offset:)``).
        var wholeValues: [GattAttributeID: [UInt8]] = [:]
        var stopped = false
        /// Phones connected to the mirror now.
        var phones = 0
        /// The link is dropped and made again on purpose (``Options/reconnectWhenPhonesLeave``): not a loss.
        var cycling = false
        /// When the last remaking began, and how many there were.
        var lastCycle: ContinuousClock.Instant?
        var cycles = 0
        /// A remaking is scheduled and has not begun yet.
        var relinkScheduled = false
    }

    public let recording: RelayRecording
    private let stack: BlueZStack
    private let adapterName: String
    private let address: BluetoothAddress
    public var deviceAddress: BluetoothAddress { address }
    public var deviceAdapter: String { adapterName }
    public var devicePairing: DevicePairing { options.pairing }
    private let profile: DeviceProfile
    private let options: Options
    private let state: Mutex<State>
    private let pending = Mutex(Pending())
    private let tasks = Mutex<[Task<Void, Never>]>([])
    /// The one remaking of the link under way or last (``Options/reconnectWhenPhonesLeave``): never more than one.
    private let cycleTask = Mutex<Task<Void, Never>?>(nil)

    /// A link to `device` (connected, its table read) on `stack`'s adapter `adapterName`, for the mirror running `profile`.
    public init(
        device: RemoteDevice, table: RemoteGattTable, handles: [DBusObjectPath: AttributeHandle], profile: DeviceProfile, stack: BlueZStack,
        recording: RelayRecording, options: Options = Options()
    ) {
        self.stack = stack
        self.adapterName = device.adapter.name
        self.address = device.properties.address ?? .zero
        self.profile = profile
        self.options = options
        self.recording = recording
        state = Mutex(State(device: device, targets: RelayTargets(profile: profile, table: table, handles: handles)))
    }

    /// Mirror characteristics the device has no counterpart for.
    public var unmatched: [String] { state.withLock { $0.targets.unmatched } }

    /// Starts handing notifications to `emulator` and following the link.
    public func start(emulator: Emulator) {
        let waiting = pending.withLock { pending -> Bool in
            pending.emulator = emulator
            guard !pending.queue.isEmpty, !pending.draining else { return false }
            pending.draining = true
            return true
        }
        if waiting { emulator.relayNotifications(from: takeNotifications) }
        let following = Task { [weak self] in
            guard let self else { return }
            await self.follow(emulator)
        }
        tasks.withLock { $0 += [following] }
    }

    /// A notification from the device (on the subscription's socket queue): queued, and handed to the emulator on
    /// its own executor, as many at a time as have arrived (one executor hop per batch, not per notification).
    private func arrived(_ notification: RelayedNotification) {
        enum Outcome { case queued, dropped, handOver(Emulator) }
        let outcome = pending.withLock { pending -> Outcome in
            guard pending.queue.count < options.notificationQueue else { return .dropped }
            pending.queue.append(notification)
            guard !pending.draining, let emulator = pending.emulator else { return .queued }
            pending.draining = true
            return .handOver(emulator)
        }
        switch outcome {
        case .queued: break
        case .dropped: state.withLock { $0.droppedNotifications += 1 }
        case .handOver(let emulator): emulator.relayNotifications(from: takeNotifications)
        }
    }

    /// The queued notifications, all of them; an empty answer ends the hand-over (atomically: one arriving after
    /// it starts the next).
    private func takeNotifications() -> [RelayedNotification] {
        pending.withLock { pending in
            if pending.queue.isEmpty {
                pending.draining = false
                return []
            }
            defer { pending.queue = [] }
            return pending.queue
        }
    }

    /// Unsubscribes, disconnects from the device (forgetting it unless it was paired) and stops.
    public func stop(forget: Bool) async {
        let (device, subscriptions) = state.withLock { state in
            state.stopped = true
            defer { state.subscriptions = [:] }
            return (state.device, Array(state.subscriptions.values))
        }
        for task in tasks.withLock({ $0 }) { task.cancel() }
        cycleTask.withLock { $0?.cancel() }
        pending.withLock { $0.queue = [] }
        for subscription in subscriptions { await subscription.stop() }
        if let device {
            await device.disconnect()
            if forget, !device.properties.paired { await device.forget() }
            await device.stop()
        }
    }

    // MARK: RelayUpstream

    public func read(_ attribute: GattAttributeID, offset: Int) async throws(ATTError) -> [UInt8] {
        let (object, handle) = try await target(attribute)
        // A phone reads a long value as a Read and Read Blobs at increasing offsets; BlueZ reads the whole value for
        // the first (a long read of its own): the blobs are served from it, and the device sees one long read.
        if offset > 0, let whole = state.withLock({ $0.wholeValues[attribute] }) {
            guard offset <= whole.count else { throw .invalidOffset }
            return Array(whole.dropFirst(offset))
        }
        do {
            let bytes = try await RemoteGattIO.read(
                object.path, interface: object.interface, offset: 0, connection: stack.connection, timeout: options.operationTimeout)
            state.withLock { $0.wholeValues[attribute] = bytes }
            if offset == 0, attribute.descriptor == nil, let handle { recording.record(.read(handle: handle, offset: 0, value: bytes)) }
            if offset <= bytes.count { return Array(bytes.dropFirst(offset)) }
        } catch {
            if attribute.descriptor == nil, let handle {
                recording.record(.error(handle: handle, request: offset > 0 ? .readBlobRequest : .readRequest, code: Self.code(error)))
            }
            throw Self.answer(error, writing: false)
        }
        throw .invalidOffset
    }

    public func write(_ attribute: GattAttributeID, value: [UInt8], offset: Int, withResponse: Bool) async throws(ATTError) {
        let (object, handle) = try await target(attribute)
        // Recorded before it is sent: what the device notifies in answer can arrive (on the subscription's socket)
        // before bluetoothd's reply to the call, and must come after the write in the conversation.
        let recorded = attribute.descriptor == nil ? handle : nil
        let ticket = recorded.flatMap { recording.record(.write(handle: $0, value: value, withResponse: withResponse)) }
        do {
            try await RemoteGattIO.write(
                object.path, interface: object.interface, value: value, offset: offset, type: withResponse ? .request : .command,
                connection: stack.connection, timeout: options.operationTimeout)
        } catch {
            if let handle = recorded {
                // The write, then its refusal, as an import of a capture has them (the replay rule fails that write);
                // a refusal for security is the flags' business and the phone writes again once paired.
                let code = Self.code(error)
                if code.asksForSecurity, let ticket { recording.retract(ticket) }
                recording.record(.error(handle: handle, request: withResponse ? .writeRequest : .writeCommand, code: code))
            }
            throw Self.answer(error, writing: true)
        }
    }

    public func checkLink() async -> String? {
        await relinked()
        let (attached, found) = state.withLock { ($0.attached, $0.targets.linkCheck) }
        guard attached else { return "none: the device's link is down, and what waited for it with it" }
        guard let check = found else { return nil }
        let what =
            "a read of the device's Client Characteristic Configuration descriptor"
            + (check.handle.map { " (handle \($0))" } ?? "")
        do {
            _ = try await RemoteGattIO.read(
                check.path, interface: BlueZNames.gattDescriptor, offset: 0, connection: stack.connection,
                timeout: options.operationTimeout)
            return what
        } catch {
            // Answered with an error, or the link is gone: either way nothing waits in bluetoothd any more.
            return what + " (answered: \(error))"
        }
    }

    public func setSubscribed(_ characteristic: String, _ subscribed: Bool) async throws(ATTError) {
        await relinked()  // the device's objects, as the link being made again finds them
        let target = state.withLock { $0.targets.characteristics[characteristic] }
        guard let target else { throw .notSupported }
        let indicate = target.properties.contains(.indicate) && !target.properties.contains(.notify)
        if !subscribed {
            let existing = state.withLock { $0.subscriptions.removeValue(forKey: characteristic) }
            await existing?.stop()
            if let handle = target.handle { recording.record(.subscribe(handle: handle, notify: false, indicate: false)) }
            return
        }
        guard state.withLock({ $0.subscriptions[characteristic] == nil }) else { return }
        let recording = self.recording
        let handle = target.handle
        let subscription: RemoteSubscription
        do {
            subscription = try await RemoteSubscription.start(target.path, connection: stack.connection) { [weak self] value in
                if let handle { recording.record(.notification(handle: handle, value: value, indication: indicate)) }
                self?.arrived(RelayedNotification(characteristic: characteristic, value: value, indicate: indicate))
            }
        } catch {
            throw Self.answer(error, writing: true)
        }
        let kept = state.withLock { state -> Bool in
            guard state.subscriptions[characteristic] == nil, !state.stopped else { return false }
            state.subscriptions[characteristic] = subscription
            return true
        }
        if !kept { await subscription.stop() }
        if let handle { recording.record(.subscribe(handle: handle, notify: !indicate, indicate: indicate)) }
    }

    public func central(_ central: BluetoothAddress, connected: Bool) async {
        if connected { recording.connected(central) } else { recording.disconnected() }
        let last = state.withLock { state -> Bool in
            state.phones = max(0, state.phones + (connected ? 1 : -1))
            return state.phones == 0 && !connected
        }
        guard last, options.reconnectWhenPhonesLeave else { return }
        let now = ContinuousClock.now
        enum Decision { case relink, busy, recent }
        let decision = state.withLock { state -> Decision in
            guard !state.cycling, !state.relinkScheduled, !state.stopped else { return .busy }
            guard state.lastCycle.map({ now - $0 >= options.minimumRelinkInterval }) ?? true else { return .recent }
            state.relinkScheduled = true
            return .relink
        }
        switch decision {
        case .busy: return  // the remaking under way serves this departure too
        case .recent:
            await pending.withLock { $0.emulator }?.relayNote(
                "relay: the last phone left, and the device's link was made again less than \(Self.seconds(options.minimumRelinkInterval)) ago: kept"
            )
        case .relink:
            // One task at a time (the flag above), kept in one slot: a central coming and going piles nothing up.
            cycleTask.withLock { slot in
                slot = Task { [weak self] in
                    guard let self else { return }
                    await self.reconnect()
                }
            }
        }
    }

    /// How often the device's link was made again because the last phone left.
    public var relinks: Int { state.withLock { $0.cycles } }

    /// The last phone left (``Options/reconnectWhenPhonesLeave``): drops the device's link and makes it again. A
    /// phone that connects meanwhile is answered once the link is back (``Options/relinkWait`` at most); if the
    /// device cannot be reached again, the usual loss follows (``follow(_:)``).
    private func reconnect() async {
        let device = state.withLock { state -> RemoteDevice? in
            state.relinkScheduled = false
            guard state.attached, !state.stopped, !state.cycling, state.phones == 0 else { return nil }
            state.cycling = true
            state.lastCycle = ContinuousClock.now
            state.cycles += 1
            state.attached = false
            state.wholeValues = [:]
            return state.device
        }
        guard let device else { return }
        let subscriptions = state.withLock { state in
            defer { state.subscriptions = [:] }
            return Array(state.subscriptions.values)
        }
        for subscription in subscriptions { await subscription.stop() }
        let started = ContinuousClock.now
        await device.disconnect()
        let back = await attach()
        state.withLock { $0.cycling = false }
        let emulator = pending.withLock { $0.emulator }
        await emulator?.relayNote(
            back
                ? "relay: the last phone left: the device \(address) was disconnected and connected again in \(Self.seconds(since: started))"
                : "relay: the last phone left: the device \(address) was disconnected and could not be connected again at once")
    }

    /// Notifications dropped because the emulator could not keep up.
    public var droppedNotifications: Int { state.withLock { $0.droppedNotifications } }

    // MARK: Following the link

    private func target(_ attribute: GattAttributeID) async throws(ATTError) -> (
        (path: DBusObjectPath, interface: String), AttributeHandle?
    ) {
        await relinked()
        let found = state.withLock { state in
            (state.attached ? state.targets.object(attribute) : nil, state.targets.characteristics[attribute.characteristic]?.handle)
        }
        guard let object = found.0 else { throw .failed }
        return (object, found.1)
    }

    /// Returns once the link is not being made again on purpose (or after ``Options/relinkWait``).
    private func relinked() async {
        let end = ContinuousClock.now + options.relinkWait
        while state.withLock({ $0.cycling && !$0.stopped }), ContinuousClock.now < end {
            try? await Task.sleep(for: options.pollInterval)
        }
    }

    /// Watches the device's link; when it goes down, tells the emulator and attaches again once the device is back.
    private func follow(_ emulator: Emulator) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: options.pollInterval)
            let (device, stopped) = state.withLock { ($0.device, $0.stopped) }
            guard !stopped else { return }
            if state.withLock({ $0.cycling }) { continue }
            if let device, device.properties.connected, !device.isGone { continue }
            let reason =
                device == nil || device?.isGone == true
                ? "bluetoothd removed the device \(address) (bluetoothd restarted, or the device was forgotten)"
                : "the device \(address) disconnected"
            let subscriptions = state.withLock { state in
                state.attached = false
                defer { state.subscriptions = [:] }
                return Array(state.subscriptions.values)
            }
            await emulator.deviceLost(reason)
            for subscription in subscriptions { await subscription.stop() }
            let started = ContinuousClock.now
            var attempts = 0
            while !Task.isCancelled, !state.withLock({ $0.stopped }) {
                attempts += 1
                if await attach() {
                    await emulator.deviceBack(
                        "the device \(address) is connected again after \(Self.seconds(since: started)) (attempt \(attempts))")
                    break
                }
                try? await Task.sleep(for: options.retryInterval)
            }
        }
    }

    /// One attempt to reach the device again: the same device object if bluetoothd still has it, else a scan
    /// for its address; connect, read the table again and match it with the mirror's.
    private func attach() async -> Bool {
        let adapter: Adapter
        do {
            adapter = try await stack.adapter(adapterName)
            if !adapter.powered { try await adapter.powerOn() }
        } catch {
            return false
        }
        var device = state.withLock { $0.device }
        if device == nil || device?.isGone == true {
            await device?.stop()
            device = nil
            state.withLock { $0.device = nil }
            guard let discovery = try? await DeviceDiscovery.start(on: adapter) else { return false }
            let found = try? await discovery.find(.address(address), timeout: .seconds(5), settle: .zero)
            await discovery.stop()
            guard let found, let followed = try? await RemoteDevice.follow(found, adapter: adapter) else { return false }
            device = followed
            state.withLock { $0.device = followed }
        }
        guard let device else { return false }
        do {
            try await device.connect(timeout: options.connectTimeout)
            let table = try await RemoteGattTable.read(device: device.path, stack: stack)
            let targets = RelayTargets(profile: profile, table: table)
            let handles = state.withLock { $0.targets }
            state.withLock { state in
                state.targets = targets.keepingHandles(of: handles)
                state.attached = true
            }
            return true
        } catch {
            return false
        }
    }

    // MARK: Errors

    /// The ATT error the device sent, as BlueZ reported it.
    static func code(_ error: RemoteGattError) -> ATTErrorCode {
        error.attError ?? .unlikelyError
    }

    /// What the mirror answers for the device's error: the same code where bluetoothd lets an application send it;
    /// else `failed` (0x80): insufficient authentication or encryption come from the mirror's security flags.
    static func answer(_ error: RemoteGattError, writing: Bool) -> ATTError {
        error.attError.flatMap(ATTError.init(sending:)) ?? .failed
    }

    static func seconds(since start: ContinuousClock.Instant) -> String { seconds(ContinuousClock.now - start) }

    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let tenths = seconds * 10 + attoseconds / 100_000_000_000_000_000
        return "\(tenths / 10).\(tenths % 10) s"
    }
}
