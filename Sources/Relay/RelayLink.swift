import BlueZ
import Bluetooth
import DBus
import Emulator
import Profile
import Replica
import TextEscaping

/// The relay's link to the real device, as a central on the upstream adapter: forwards what the mirror's
/// centrals do (``RelayUpstream``), hands the device's notifications to the emulator in order, records the
/// conversation, and follows the link: when the device drops or goes away the emulator is told
/// (``Emulator/deviceLost(_:)``) and the link attaches again as soon as the device is back.
///
/// An actor on the D-Bus loop of its stack's connection, the loop the mirror's emulator runs on: its state needs no
/// lock and a call from the emulator no thread hop; the subscriptions' handlers run on that loop too and queue the
/// device's notifications in the actor's state directly. It follows the link by bluetoothd's signals
/// (``RemoteDevice/wait(until:for:)``), not by polling.
public actor RelayLink: RelayUpstream {
    public struct Options: Sendable {
        public var connectTimeout: Duration = .seconds(15)
        /// How long a read or write may wait for the device (ATT's own transaction timeout is 30 s).
        public var operationTimeout: Duration = .seconds(30)
        /// Pause between attempts to reach the device again.
        public var retryInterval: Duration = .seconds(1)
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
        /// How long after a phone's operation began a request that pairing with the device explains may wait for that
        /// pairing, to be made once more (``afterPairing(_:)``): within bluetoothd's 5 s wait for the mirror's answer.
        public var pairingRetryWindow: Duration = .seconds(4)
        /// The shortest time between two remakings of the device's link (``reconnectWhenPhonesLeave``): a central
        /// that connects and leaves in a loop cannot keep the real device's link going down and up.
        public var minimumRelinkInterval: Duration = .seconds(5)

        public init() {}
    }

    /// What went through the relay so far (``recordedConversation()``).
    private var recording = RelayRecording()
    private let stack: BlueZStack
    private let adapterName: String
    private let address: BluetoothAddress
    public nonisolated var deviceAddress: BluetoothAddress { address }
    public nonisolated var deviceAdapter: String { adapterName }
    public nonisolated var devicePairing: DevicePairing { options.pairing }
    /// Mirror characteristics the device had no counterpart for when the link was made.
    public nonisolated let unmatched: [CharacteristicID]
    private let profile: DeviceProfile
    private let options: Options
    /// The device's notifications not yet handed to the emulator, oldest first (at most
    /// ``Options/notificationQueue``), whether a hand-over is under way, and how many were dropped.
    private var pending: [RelayedNotification] = []
    private var draining = false
    private var dropped = 0
    private var emulator: Emulator?

    private var device: RemoteDevice?
    private var targets: RelayTargets
    private var subscriptions: [CharacteristicID: RemoteSubscription] = [:]
    private var attached = true
    /// The last whole value read of each attribute, for the Read Blobs that follow (see ``read(_:offset:)``).
    private var wholeValues: [GattAttributeID: [UInt8]] = [:]
    private var stopped = false
    /// Phones connected to the mirror now.
    private var phones = 0
    /// The link is dropped and made again on purpose (``Options/reconnectWhenPhonesLeave``): not a loss. Watched:
    /// operations wait for it to end (``relinked()``).
    private let cycling = Watched(false)
    /// When the last remaking began, and how many there were.
    private var lastCycle: ContinuousClock.Instant?
    private var cycles = 0
    /// A remaking is scheduled and has not begun yet.
    private var relinkScheduled = false
    private var following: Task<Void, Never>?
    /// The one remaking of the link under way or last (``Options/reconnectWhenPhonesLeave``): never more than one.
    private var cycleTask: Task<Void, Never>?

    public nonisolated var unownedExecutor: UnownedSerialExecutor { stack.connection.loop.asUnownedSerialExecutor() }

    /// A link to `device` (connected, its table read) on `stack`'s adapter `adapterName`, for the mirror running `profile`.
    public init(
        device: RemoteDevice, table: RemoteGattTable, handles: [DBusObjectPath: AttributeHandle], profile: DeviceProfile, stack: BlueZStack,
        options: Options = Options()
    ) {
        self.stack = stack
        self.adapterName = device.adapter.name
        self.address = device.properties.address ?? .zero
        self.profile = profile
        self.options = options
        self.device = device
        let targets = RelayTargets(profile: profile, table: table, handles: handles)
        self.targets = targets
        unmatched = targets.unmatched
    }

    /// Starts handing notifications to `emulator` and following the link.
    public func start(emulator: Emulator) {
        self.emulator = emulator
        handOver()
        following = Task { [weak self] in await self?.follow(emulator) }
    }

    /// A notification from the device: queued, and handed to the emulator as many at a time as have arrived. Called
    /// by the subscription's handler on the loop thread, which is this actor's executor: no hop, no lock.
    private func arrived(_ notification: RelayedNotification) {
        if let handle = targets.characteristics[notification.characteristic]?.handle {
            recording.record(.notification(handle: handle, value: notification.value, indication: notification.indicate))
        }
        guard pending.count < options.notificationQueue else {
            dropped += 1
            return
        }
        pending.append(notification)
        handOver()
    }

    /// Starts handing the queue to the emulator unless that is under way: one task drains it, batch after batch (the
    /// emulator runs on this loop too, so each call is a switch between actors on one thread).
    private func handOver() {
        guard !draining, !pending.isEmpty, let emulator else { return }
        draining = true
        Task { [weak self] in await self?.drain(emulator) }
    }

    private func drain(_ emulator: Emulator) async {
        while !pending.isEmpty, !stopped {
            let batch = pending
            pending = []
            for notification in batch {
                await emulator.relayNotification(notification.characteristic, value: notification.value, indicate: notification.indicate)
            }
        }
        draining = false
    }

    /// The subscription handler's way in: on the loop thread it runs in the actor's isolation at once (keeping the
    /// device's order); anywhere else (never expected) it hops.
    nonisolated func received(_ notification: RelayedNotification) {
        if stack.connection.loop.isCurrent {
            assumeIsolated { $0.arrived(notification) }
        } else {
            Task { await self.arrived(notification) }
        }
    }

    /// What went through the relay so far: the recorded profile's and the capture's conversation.
    public func recordedConversation() -> RelayRecording.Conversation { recording.conversation }

    /// Unsubscribes, disconnects from the device (forgetting it unless it was paired) and stops.
    public func stop(forget: Bool) async {
        stopped = true
        let open = Array(subscriptions.values)
        subscriptions = [:]
        following?.cancel()
        cycleTask?.cancel()
        cycling.update { $0 = false }  // nothing waits for a remaking any more
        pending = []
        for subscription in open { await subscription.stop() }
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
        if offset > 0, let whole = wholeValues[attribute] {
            guard offset <= whole.count else { throw .invalidOffset }
            return Array(whole.dropFirst(offset))
        }
        do {
            let bytes = try await afterPairing { () async throws(RemoteGattError) in
                try await RemoteGattIO.read(
                    object.path, interface: object.interface, offset: 0, connection: stack.connection, timeout: options.operationTimeout)
            }
            wholeValues[attribute] = bytes
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
            try await afterPairing { () async throws(RemoteGattError) in
                try await RemoteGattIO.write(
                    object.path, interface: object.interface, value: value, offset: offset, type: withResponse ? .request : .command,
                    connection: stack.connection, timeout: options.operationTimeout)
            }
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

    /// Makes `request`, and once more when pairing with the device explains its failure. A device that wants security
    /// answers Insufficient Authentication or Encryption; bluetoothd then pairs and repeats the request itself, but
    /// that repeat can be written before the link is secured and fail (ENOTCONN). bluetoothd 5.78 and later fail the
    /// request then without an answer PDU, which gatt-client.c's `process_error` reports as Unlikely Error (0x0E);
    /// older ones lose the request (docs/relay.md). So a request that failed that way (the device's security refusal,
    /// Unlikely Error, or no ATT code at all) on a link not paired before, when the link is paired and up within
    /// ``Options/pairingRetryWindow``, is made again: it never reached the device, or the device refused it.
    private func afterPairing<Value>(_ request: () async throws(RemoteGattError) -> Value) async throws(RemoteGattError) -> Value {
        let started = ContinuousClock.now
        let pairedBefore = device?.properties.paired ?? true
        do {
            return try await request()
        } catch {
            // Only a failure pairing can explain: bluetoothd's own (no ATT code, or the Unlikely Error it makes of a
            // request that got no answer PDU), or the device's security refusal.
            guard error.attError == nil || error.attError == .unlikelyError || error.asksForSecurity else { throw error }
            if let unexplained = await whyNotAgain(pairedBefore: pairedBefore, deadline: started + options.pairingRetryWindow) {
                // Said, so that an answer the phone did not expect can be traced to what bluetoothd reported.
                await emulator?.relayNote("relay: the device's link failed a request (\(error)); not made again: \(unexplained)")
                throw error
            }
            await emulator?.relayNote(
                "relay: the device paired with the relay while a request waited (\(error)); made once more, now that the link is paired")
            return try await request()
        }
    }

    /// Why a request that failed during ``afterPairing(_:)`` is not made again, or nil once the link is paired and up
    /// before `deadline` (past it, the phone has had bluetoothd's answer already: the device must not get the request).
    private func whyNotAgain(pairedBefore: Bool, deadline: ContinuousClock.Instant) async -> String? {
        if pairedBefore { return "the link was paired before it" }
        guard ContinuousClock.now < deadline else { return "it failed after \(Self.seconds(options.pairingRetryWindow))" }
        guard let device, !device.link.isDown else { return "the link is down" }
        let link = await device.wait(until: deadline) { $0.properties.paired || $0.isDown }
        if link?.isDown ?? device.link.isDown { return "the link went down" }
        return device.properties.paired ? nil : "the link was not paired within \(Self.seconds(options.pairingRetryWindow))"
    }

    public func checkLink() async -> String? {
        await relinked()
        guard attached else { return "none: the device's link is down, and what waited for it with it" }
        guard let check = targets.linkCheck else { return nil }
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

    public func setSubscribed(_ characteristic: CharacteristicID, _ subscribed: Bool) async throws(ATTError) {
        await relinked()  // the device's objects, as the link being made again finds them
        guard let target = targets.characteristics[characteristic] else { throw .notSupported }
        let indicate = target.properties.contains(.indicate) && !target.properties.contains(.notify)
        if !subscribed {
            let existing = subscriptions.removeValue(forKey: characteristic)
            await existing?.stop()
            if let handle = target.handle { recording.record(.subscribe(handle: handle, notify: false, indicate: false)) }
            return
        }
        guard subscriptions[characteristic] == nil else { return }
        let handle = target.handle
        let subscription: RemoteSubscription
        do {
            subscription = try await RemoteSubscription.start(target.path, connection: stack.connection) { [weak self] value in
                self?.received(RelayedNotification(characteristic: characteristic, value: value, indicate: indicate))
            }
        } catch {
            throw Self.answer(error, writing: true)
        }
        // Another subscription may have been made while this one was (the actor is reentrant at the await), or the
        // link stopped: the first one made stays.
        guard subscriptions[characteristic] == nil, !stopped else {
            await subscription.stop()
            return
        }
        subscriptions[characteristic] = subscription
        if let handle { recording.record(.subscribe(handle: handle, notify: !indicate, indicate: indicate)) }
    }

    public func central(_ central: BluetoothAddress, connected: Bool) async {
        if connected { recording.connected(central) } else { recording.disconnected() }
        phones = max(0, phones + (connected ? 1 : -1))
        guard phones == 0, !connected, options.reconnectWhenPhonesLeave else { return }
        // A remaking under way or scheduled serves this departure too.
        guard !cycling.value, !relinkScheduled, !stopped else { return }
        if let lastCycle, ContinuousClock.now - lastCycle < options.minimumRelinkInterval {
            await emulator?.relayNote(
                "relay: the last phone left, and the device's link was made again less than \(Self.seconds(options.minimumRelinkInterval)) ago: kept"
            )
            return
        }
        // One task at a time (the flag), kept in one slot: a central coming and going piles nothing up.
        relinkScheduled = true
        cycleTask = Task { [weak self] in await self?.reconnect() }
    }

    /// How often the device's link was made again because the last phone left.
    public var relinks: Int { cycles }

    /// The last phone left (``Options/reconnectWhenPhonesLeave``): drops the device's link and makes it again. A
    /// phone that connects meanwhile is answered once the link is back (``Options/relinkWait`` at most); if the
    /// device cannot be reached again, the usual loss follows (``follow(_:)``).
    private func reconnect() async {
        relinkScheduled = false
        guard attached, !stopped, !cycling.value, phones == 0, let device else { return }
        cycling.update { $0 = true }
        lastCycle = ContinuousClock.now
        cycles += 1
        attached = false
        wholeValues = [:]
        let open = Array(subscriptions.values)
        subscriptions = [:]
        for subscription in open { await subscription.stop() }
        let started = ContinuousClock.now
        await device.disconnect()
        let back = await attach()
        cycling.update { $0 = false }
        await emulator?.relayNote(
            back
                ? "relay: the last phone left: the device \(address) was disconnected and connected again in \(Self.seconds(since: started))"
                : "relay: the last phone left: the device \(address) was disconnected and could not be connected again at once")
    }

    /// Notifications dropped because the emulator could not keep up.
    public var droppedNotifications: Int { dropped }

    // MARK: Following the link

    private func target(_ attribute: GattAttributeID) async throws(ATTError) -> (
        (path: DBusObjectPath, interface: String), AttributeHandle?
    ) {
        await relinked()
        guard attached, let object = targets.object(attribute) else { throw .failed }
        return (object, targets.characteristics[attribute.characteristic]?.handle)
    }

    /// Returns once the link is not being made again on purpose (or after ``Options/relinkWait``).
    private func relinked() async {
        guard !stopped else { return }
        _ = await cycling.wait(until: ContinuousClock.now + options.relinkWait) { !$0 }
    }

    /// Follows the device's link (bluetoothd's signals); when it goes down, tells the emulator and attaches again
    /// once the device is back.
    private func follow(_ emulator: Emulator) async {
        while !Task.isCancelled, !stopped {
            if cycling.value {
                // Dropped and made again on purpose: not a loss; what follows is looked at once it is over.
                _ = await cycling.wait { !$0 }
                continue
            }
            if attached, let device, !device.link.isDown {
                _ = await device.wait { $0.isDown }
                continue  // cancelled, or down: looked at again (a remaking may have begun meanwhile)
            }
            // Down, gone, or not attached (a remaking that could not reach the device again): a loss.
            let reason =
                device == nil || device?.isGone == true
                ? "bluetoothd removed the device \(address) (bluetoothd restarted, or the device was forgotten)"
                : "the device \(address) disconnected"
            attached = false
            let open = Array(subscriptions.values)
            subscriptions = [:]
            await emulator.deviceLost(reason)
            for subscription in open { await subscription.stop() }
            let started = ContinuousClock.now
            var attempts = 0
            while !Task.isCancelled, !stopped {
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
        if let stale = device, stale.isGone {
            device = nil
            await stale.stop()
        }
        if device == nil {
            guard let discovery = try? await DeviceDiscovery.start(on: adapter) else { return false }
            let found = try? await discovery.find(.address(address), timeout: .seconds(5), settle: .zero)
            await discovery.stop()
            guard let found, let followed = try? await RemoteDevice.follow(found, adapter: adapter) else { return false }
            device = followed
        }
        guard let device else { return false }
        do {
            try await device.connect(timeout: options.connectTimeout)
            let table = try await RemoteGattTable.read(device: device.path, stack: stack)
            targets = RelayTargets(profile: profile, table: table).keepingHandles(of: targets)
            attached = true
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
