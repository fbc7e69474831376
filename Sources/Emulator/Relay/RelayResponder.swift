import BlueZ
import Bluetooth
import Profile

/// `gattemu relay`'s responder: a real device answers. Reads and writes go to it (``RelayUpstream``), its answers and
/// ATT errors come back, each leg timed and logged; Write Commands are bounded by what its link has carried; a
/// characteristic is subscribed on the device while any central is subscribed through the mirror. While the device is
/// away, what arrives is refused.
///
/// Subscriptions and link events also reach the relayed profile's engine (``local``): it keeps who is subscribed, for
/// delivering the device's notifications, and the profile's own rules, if any.
final class RelayResponder: GattResponder {
    let upstream: any RelayUpstream
    var state = RelayState()
    let local = ProfileResponder()
    /// Subscriptions being made or ended on the device, and the reads and writes that came after them: the phone's
    /// order is kept, so what it does after subscribing reaches the device once the device is subscribed (a device
    /// that answers a write by indicating would otherwise indicate to nobody).
    private var subscriptionsUnderWay = 0
    private var waitingForSubscriptions: [CheckedContinuation<Void, Never>] = []
    /// ``Emulator/endRelaySnapshots()`` waiting for the snapshot being written.
    var waitingForSnapshot: [CheckedContinuation<Void, Never>] = []

    init(upstream: any RelayUpstream, snapshot: RelaySnapshotWriter?) {
        self.upstream = upstream
        state.snapshotWriter = snapshot
    }

    /// A snapshot was written (or failed): whoever waits to end the snapshots goes on.
    func snapshotWritten() {
        let waiting = waitingForSnapshot
        waitingForSnapshot = []
        for continuation in waiting { continuation.resume() }
    }

    func read(_ operation: ReadOperation, in runtime: isolated Emulator) async throws(ATTError) -> [UInt8] {
        let id = operation.attribute
        let central = operation.central
        await subscriptionsSettled(in: runtime)
        guard !state.deviceAway else { throw runtime.answer(.failed, central, id) }
        let start = ContinuousClock.now
        let before = state.commandsSent
        do {
            let bytes = try await upstream.read(id, offset: operation.offset)
            // The device answered a Read Request, sent after the commands before it (a Read Blob may be served from
            // the whole value read first, and proves nothing).
            if operation.offset == 0 { state.commandsGone(upTo: before) }
            runtime.log.record(
                .relayed, central: central.logged, characteristic: id.characteristic, descriptor: id.descriptor, value: bytes,
                detail: "device answered the read" + (operation.offset > 0 ? " at offset \(operation.offset)" : "")
                    + " in \(Emulator.milliseconds(since: start))")
            return bytes
        } catch {
            runtime.log.record(
                .relayed, central: central.logged, characteristic: id.characteristic, descriptor: id.descriptor,
                detail: "device answered the read with error \(error) in \(Emulator.milliseconds(since: start))")
            throw error
        }
    }

    /// Forwards the write; a write bluetoothd already acknowledged goes as a Write Command and its errors stay in
    /// the log.
    func write(_ operation: WriteOperation, in runtime: isolated Emulator) async throws(ATTError) {
        do {
            try await forward(operation, in: runtime)
        } catch {
            if operation.acknowledged { throw error }
            throw runtime.answer(error, operation.central, operation.attribute)
        }
    }

    private func forward(_ operation: WriteOperation, in runtime: isolated Emulator) async throws(ATTError) {
        await subscriptionsSettled(in: runtime)
        guard !state.deviceAway else { throw .failed }
        let id = operation.attribute
        let central = operation.central
        let value = operation.value
        let withResponse = operation.awaitsAnswer
        let log = runtime.log
        if !withResponse, !state.linkUncheckable, state.commandsWaiting >= RelayState.maximumCommandsWaiting {
            state.writesDropped += 1
            if state.writesDropped == 1 {
                log.record(
                    .relayed, central: central.logged, characteristic: id.characteristic, descriptor: id.descriptor, value: value,
                    detail: "write command dropped: \(state.commandsWaiting) write commands may still wait for the device's link "
                        + "(the phone writes faster than the device's link carries them); the next drops are counted")
            }
            return
        }
        if state.writesDropped > 0 {
            log.record(
                .relayed, central: central.logged, characteristic: id.characteristic, descriptor: id.descriptor,
                detail: "\(state.writesDropped) write commands dropped while the device's link was busy")
            state.writesDropped = 0
        }
        // A request's answer comes after the commands sent before it have gone (bluetoothd sends it only then).
        let before = state.commandsSent
        if !withResponse { state.commandsSent += 1 }
        defer { checkLinkIfBusy(in: runtime) }
        let start = ContinuousClock.now
        let what = withResponse ? "write" : "write command"
        do {
            try await upstream.write(id, value: value, offset: operation.offset, withResponse: withResponse)
            if withResponse { state.commandsGone(upTo: before) }
            log.record(
                .relayed, central: central.logged, characteristic: id.characteristic, descriptor: id.descriptor, value: value,
                detail: withResponse
                    ? "device answered the write in \(Emulator.milliseconds(since: start))"
                    : "write command sent to the device in \(Emulator.milliseconds(since: start))")
        } catch {
            log.record(
                .relayed, central: central.logged, characteristic: id.characteristic, descriptor: id.descriptor, value: value,
                detail: "device answered the \(what) with error \(error) in \(Emulator.milliseconds(since: start))")
            throw error
        }
    }

    /// Starts a link check when enough commands may be waiting for the device's link and none is under way; when it
    /// is answered (``linkChecked(_:before:start:in:)``), the commands before it are gone, and another starts if
    /// enough were sent meanwhile.
    func checkLinkIfBusy(in runtime: isolated Emulator) {
        guard !state.linkChecking, !state.linkUncheckable, !runtime.stopped,
            state.commandsWaiting >= RelayState.linkCheckAfter
        else { return }
        state.linkChecking = true
        let before = state.commandsSent
        let upstream = self.upstream
        Task(executorPreference: runtime.loop) { [weak runtime] in
            let start = ContinuousClock.now
            let asked = await upstream.checkLink()
            await runtime?.relayLinkChecked(asked, before: before, start: start)
        }
    }

    func linkChecked(_ asked: String?, before: Int, start: ContinuousClock.Instant, in runtime: isolated Emulator) {
        state.linkChecking = false
        guard let asked else {
            state.linkUncheckable = true
            runtime.log.record(
                .note,
                detail: "relay: write commands to the device are not bounded: it has no Client Characteristic "
                    + "Configuration descriptor to check its link with (a phone that writes faster than the device's "
                    + "link carries them fills the device side's bluetoothd)")
            return
        }
        let gone = max(0, before - state.commandsGone)
        state.commandsGone(upTo: before)
        runtime.log.record(
            .relayed,
            detail: "link check: \(gone) more write commands have left for the device (\(asked), "
                + "answered in \(Emulator.milliseconds(since: start)))")
        checkLinkIfBusy(in: runtime)
    }

    func subscription(_ operation: SubscriptionOperation, in runtime: isolated Emulator) async {
        await follow(operation.characteristic, central: operation.central.address, in: runtime)
        await local.subscription(operation, in: runtime)
    }

    func link(_ event: LinkEvent, in runtime: isolated Emulator) async {
        switch event {
        case .connected(let central):
            await upstream.central(central.address, connected: true)
        case .disconnected(let central):
            for characteristic in state.deviceSubscribed.sorted() {
                await follow(characteristic, central: central.address, in: runtime)
            }
            await upstream.central(central.address, connected: false)
        }
        await local.link(event, in: runtime)
    }

    /// A relay's agent is always there and answers for both legs, with ``DevicePairing/agentCapability``.
    func agentSecurity(profile: SecurityDefinition?) -> SecurityDefinition? {
        var security = profile ?? .standard
        security.io = DevicePairing.agentCapability
        return security
    }

    /// What bluetoothd asks while it pairs with the real device (the relay is the central there): a question naming
    /// the device on the adapter the relay reaches it on, answered as ``RelayUpstream/devicePairing`` says and logged
    /// with the device's address and "device:" first. Any other question is a central's.
    func ownPairing(_ request: PairingRequest, on adapterName: String, in runtime: isolated Emulator) async -> PairingAnswer? {
        let device = request.central
        guard adapterName == upstream.deviceAdapter, device == upstream.deviceAddress else { return nil }
        switch upstream.devicePairing.decide(request) {
        case .answer(let answer, let why):
            if !why.isEmpty { runtime.log.record(.pairing, central: device, detail: "device: \(request): \(why)") }
            return answer
        case .askForPasskey:
            return await runtime.ask(request, .passkeyEntry, device: true)
        case .display(let passkey):
            runtime.pairing.displayed = PairingSnapshot.Displayed(central: device, passkey: passkey, device: true)
            runtime.log.record(.pairing, central: device, detail: "device: \(request): type it on the device")
            return .accept
        }
    }

    /// The mirror does not advertise while the device is away.
    var mayAdvertise: Bool { !state.deviceAway }

    /// Follows the mirror's subscriptions to `characteristic` after `central`'s changed (or its link went): the
    /// device is subscribed when the first central subscribes and unsubscribed when the last one leaves.
    private func follow(_ characteristic: CharacteristicID, central: BluetoothAddress, in runtime: isolated Emulator) async {
        let subscribed = !runtime.centrals.subscribers(of: characteristic).isEmpty
        guard subscribed != state.deviceSubscribed.contains(characteristic), !state.deviceAway else { return }
        if subscribed { state.deviceSubscribed.insert(characteristic) } else { state.deviceSubscribed.remove(characteristic) }
        subscriptionsUnderWay += 1
        defer { subscriptionSettled() }
        do {
            try await upstream.setSubscribed(characteristic, subscribed)
            runtime.log.record(
                .relayed, central: central, characteristic: characteristic,
                detail: subscribed
                    ? "device subscribed" + Self.subscriptionCaveat(runtime.profile.characteristic(characteristic)?.flags ?? [])
                    : "device unsubscribed"
            )
        } catch {
            runtime.log.record(
                .relayed, central: central, characteristic: characteristic,
                detail: "device refused to \(subscribed ? "subscribe" : "unsubscribe"): \(error)")
        }
    }

    /// Returns once no subscription is being made or ended on the device.
    private func subscriptionsSettled(in runtime: isolated Emulator) async {
        guard subscriptionsUnderWay > 0 else { return }
        await withCheckedContinuation { waitingForSubscriptions.append($0) }
    }

    private func subscriptionSettled() {
        subscriptionsUnderWay -= 1
        guard subscriptionsUnderWay == 0 else { return }
        let waiting = waitingForSubscriptions
        waitingForSubscriptions = []
        for continuation in waiting { continuation.resume() }
    }

    /// What the device's subscription cannot carry: for a characteristic that offers both notifications and
    /// indications, bluetoothd's `StartNotify` writes 0x0001 (notifications) to the device's CCC descriptor whatever the
    /// phone enabled, and D-Bus gives no way to ask for indications (nor tells gattemu which the phone chose): a
    /// device that sends indications only when they are enabled sends none through the relay (docs/relay.md).
    static func subscriptionCaveat(_ flags: [CharacteristicFlag]) -> String {
        guard flags.contains(.notify), flags.contains(.indicate) else { return "" }
        return
            " for notifications only (it offers notify and indicate; BlueZ subscribes a central for notifications when both are offered, whatever the phone enabled: indications the device sends only when enabled do not come)"
    }
}
