import BlueZ
import Bluetooth
import Dispatch
import Profile

/// `gattemu relay`'s part of the emulator: the device it forwards to, who subscribed through the mirror, and
/// whether the device is away.
struct RelayState: Sendable {
    var upstream: (any RelayUpstream)?
    /// The centrals subscribed to each characteristic through the mirror: the device is subscribed while any is.
    var subscribers: [String: Set<BluetoothAddress>] = [:]
    /// The link to the device is down: the mirror does not advertise and refuses what arrives.
    var deviceAway = false
    /// Writes the recording so far (`POST /v1/relay/snapshot`); nil when the relay has nowhere to write it.
    var snapshotWriter: RelaySnapshotWriter?
    /// A snapshot is being written: another request meanwhile is refused (409), not queued.
    var snapshotting = false
    /// Write Commands handed to the device side's bluetoothd since the relay started, and how many of them a later
    /// request's answer showed gone to the device's link (``RelayUpstream/checkLink()``): the rest may still wait in
    /// that bluetoothd, which takes every command at once and queues what the link cannot carry yet.
    var commandsSent = 0
    var commandsGone = 0
    var commandsWaiting: Int { commandsSent - commandsGone }
    /// A link check is under way; the device has nothing to check the link with (commands then go unbounded).
    var linkChecking = false
    var linkUncheckable = false
    /// Write Commands dropped since one last went through (logged when the first is dropped and when one goes again).
    var writesDropped = 0
    /// Write Commands that may wait for the device's link at most. A phone's link can outpace the device's: a Write
    /// Command past this is dropped and counted (what the phone sends unacknowledged is not queued without bound in
    /// the device side's bluetoothd, which runs as root). A write request is never dropped: each central has one at
    /// a time, and it waits for the commands before it.
    static let maximumCommandsWaiting = 64
    /// A link check starts once this many commands may be waiting (half the bound: the rest keep flowing meanwhile).
    static let linkCheckAfter = maximumCommandsWaiting / 2

    /// The first `sent` commands have left for the device's link: a request sent after them was answered.
    mutating func commandsGone(upTo sent: Int) { commandsGone = max(commandsGone, sent) }
}

extension Emulator {
    /// Makes this emulator a relay: reads, writes and subscriptions go to `upstream`, its answers and
    /// notifications come back (see ``RelayUpstream``); `snapshot` writes the recording so far when the control API
    /// asks. Call before ``start()``.
    public func relay(to upstream: any RelayUpstream, snapshot: RelaySnapshotWriter? = nil) {
        relayState.upstream = upstream
        relayState.snapshotWriter = snapshot
    }

    /// `POST /v1/relay/snapshot`: the recording so far written where the relay writes it on exit. The writing runs
    /// on a Dispatch thread, off the D-Bus loop and the cooperative pool (a long session makes a large profile; two
    /// requests holding both cooperative threads of a 2-core machine stalled every relayed operation); 409 when this is
    /// no relay, it writes nothing, or a snapshot is being written.
    public func relaySnapshot() async throws(ControlFailure) -> RelaySnapshot {
        guard relayState.upstream != nil else {
            throw ControlFailure(.conflict, "not a relay: only `gattemu relay` records a session to snapshot")
        }
        guard let writer = relayState.snapshotWriter else {
            throw ControlFailure(.conflict, "the relay was started without -o PROFILE or --capture FILE: there is nowhere to write")
        }
        guard !relayState.snapshotting else {
            throw ControlFailure(.conflict, "a snapshot is being written: ask again once it is done")
        }
        relayState.snapshotting = true
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<RelaySnapshot, ControlFailure>, Never>) in
            DispatchQueue.global(qos: .utility).async {
                do throws(ControlFailure) {
                    continuation.resume(returning: .success(try writer()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        relayState.snapshotting = false
        switch outcome {
        case .success(let snapshot):
            let written = [snapshot.profile.map { "profile \($0)" }, snapshot.capture.map { "capture \($0)" }].compactMap { $0 }
            log.record(
                .note,
                detail: "relay: snapshot of \(snapshot.operations) operations written (\(written.joined(separator: ", ")))")
            return snapshot
        case .failure(let failure):
            log.record(.error, detail: "relay: snapshot not written: \(failure.message)")
            throw failure
        }
    }

    /// The device's answer to a read, timed and logged as the relayed leg.
    func relayRead(
        _ upstream: any RelayUpstream, _ id: GattAttributeID, offset: Int, central: CentralID
    ) async throws(ATTError) -> [UInt8] {
        guard !relayState.deviceAway else { throw answer(.failed, central, id) }
        let start = ContinuousClock.now
        let before = relayState.commandsSent
        do {
            let bytes = try await upstream.read(id, offset: offset)
            // The device answered a Read Request, sent after the commands before it (a Read Blob may be served from
            // the whole value read first, and proves nothing).
            if offset == 0 { relayState.commandsGone(upTo: before) }
            log.record(
                .relayed, central: central.logged, characteristic: id.description, value: bytes,
                detail: "device answered the read" + (offset > 0 ? " at offset \(offset)" : "") + " in \(Self.milliseconds(since: start))")
            return bytes
        } catch {
            log.record(
                .relayed, central: central.logged, characteristic: id.description,
                detail: "device answered the read with error \(error) in \(Self.milliseconds(since: start))")
            throw error
        }
    }

    /// Forwards a write to the device, timed and logged as the relayed leg.
    func relayWrite(
        _ upstream: any RelayUpstream, _ id: GattAttributeID, value: [UInt8], offset: Int, withResponse: Bool, central: CentralID
    ) async throws(ATTError) {
        guard !relayState.deviceAway else { throw answer(.failed, central, id) }
        if !withResponse, !relayState.linkUncheckable, relayState.commandsWaiting >= RelayState.maximumCommandsWaiting {
            relayState.writesDropped += 1
            if relayState.writesDropped == 1 {
                log.record(
                    .relayed, central: central.logged, characteristic: id.description, value: value,
                    detail: "write command dropped: \(relayState.commandsWaiting) write commands may still wait for the device's link "
                        + "(the phone writes faster than the device's link carries them); the next drops are counted")
            }
            return
        }
        if relayState.writesDropped > 0 {
            log.record(
                .relayed, central: central.logged, characteristic: id.description,
                detail: "\(relayState.writesDropped) write commands dropped while the device's link was busy")
            relayState.writesDropped = 0
        }
        // A request's answer comes after the commands sent before it have gone (bluetoothd sends it only then).
        let before = relayState.commandsSent
        if !withResponse { relayState.commandsSent += 1 }
        defer { checkLinkIfBusy(upstream) }
        let start = ContinuousClock.now
        let what = withResponse ? "write" : "write command"
        do {
            try await upstream.write(id, value: value, offset: offset, withResponse: withResponse)
            if withResponse { relayState.commandsGone(upTo: before) }
            log.record(
                .relayed, central: central.logged, characteristic: id.description, value: value,
                detail: withResponse
                    ? "device answered the write in \(Self.milliseconds(since: start))"
                    : "write command sent to the device in \(Self.milliseconds(since: start))")
        } catch {
            log.record(
                .relayed, central: central.logged, characteristic: id.description, value: value,
                detail: "device answered the \(what) with error \(error) in \(Self.milliseconds(since: start))")
            throw error
        }
    }

    /// Starts a link check when enough commands may be waiting for the device's link and none is under way; when it
    /// is answered, the commands before it are gone, and another starts if enough were sent meanwhile.
    func checkLinkIfBusy(_ upstream: any RelayUpstream) {
        guard !relayState.linkChecking, !relayState.linkUncheckable, !stopped,
            relayState.commandsWaiting >= RelayState.linkCheckAfter
        else { return }
        relayState.linkChecking = true
        let before = relayState.commandsSent
        Task {
            let start = ContinuousClock.now
            let asked = await upstream.checkLink()
            relayState.linkChecking = false
            guard let asked else {
                relayState.linkUncheckable = true
                log.record(
                    .note,
                    detail: "relay: write commands to the device are not bounded: it has no Client Characteristic "
                        + "Configuration descriptor to check its link with (a phone that writes faster than the device's "
                        + "link carries them fills the device side's bluetoothd)")
                return
            }
            let gone = max(0, before - relayState.commandsGone)
            relayState.commandsGone(upTo: before)
            log.record(
                .relayed,
                detail: "link check: \(gone) more write commands have left for the device (\(asked), "
                    + "answered in \(Self.milliseconds(since: start)))")
            checkLinkIfBusy(upstream)
        }
    }

    /// Follows a central's subscription through the mirror: the device is subscribed when the first central
    /// subscribes and unsubscribed when the last one leaves.
    func relaySubscription(_ upstream: any RelayUpstream, _ characteristic: String, central: BluetoothAddress, subscribed: Bool) async {
        let before = relayState.subscribers[characteristic, default: []]
        var after = before
        if subscribed { after.insert(central) } else { after.remove(central) }
        relayState.subscribers[characteristic] = after.isEmpty ? nil : after
        guard before.isEmpty != after.isEmpty, !relayState.deviceAway else { return }
        do {
            try await upstream.setSubscribed(characteristic, subscribed)
            log.record(
                .relayed, central: central, characteristic: characteristic,
                detail: subscribed
                    ? "device subscribed" + Self.subscriptionCaveat(profile.characteristic(characteristic)?.flags ?? [])
                    : "device unsubscribed"
            )
        } catch {
            log.record(
                .relayed, central: central, characteristic: characteristic,
                detail: "device refused to \(subscribed ? "subscribe" : "unsubscribe"): \(error)")
        }
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

    /// Hands the device's notifications to the emulator in order: a task on the emulator's own executor (the
    /// D-Bus loop, so no hop through the global pool) takes batches from `take` until it answers none. The caller
    /// starts one at a time (`take` ends it atomically).
    public nonisolated func relayNotifications(from take: @escaping @Sendable () -> [RelayedNotification]) {
        Task(executorPreference: loop) {
            var batch = take()
            while !batch.isEmpty {
                for notification in batch {
                    await self.relayNotification(notification.characteristic, value: notification.value, indicate: notification.indicate)
                }
                batch = take()
            }
        }
    }

    /// A notification or indication the device sent: logged as the relayed leg, then sent to the mirror's
    /// subscribers through the fault engine as any notification.
    public func relayNotification(_ characteristic: String, value: [UInt8], indicate: Bool) async {
        log.record(.relayed, characteristic: characteristic, value: value, detail: "device \(indicate ? "indicated" : "notified")")
        guard !stopped, profile.characteristic(characteristic) != nil else { return }
        engine.store(value, for: characteristic)
        await perform(
            .notify(characteristic: characteristic, value: value, target: .allSubscribers, indicate: indicate), central: latestCentral)
    }

    /// The link to the device went down: the mirror stops advertising and its centrals are disconnected (a real
    /// device gone away takes its links with it).
    public func deviceLost(_ reason: String) async {
        guard !relayState.deviceAway, !stopped else { return }
        relayState.deviceAway = true
        relayState.subscribers = [:]
        relayState.commandsGone(upTo: relayState.commandsSent)  // what waited for the link went with it
        log.record(.deviceLost, detail: reason)
        await stopAdvertising()
        for central in connectedCentrals {
            log.record(.note, central: central, detail: "disconnecting: the device is away")
            do {
                try await adapter?.disconnect(central: central)
            } catch {
                log.record(.error, central: central, detail: error.description)
            }
        }
    }

    /// The device is back (connected and its table read again): the mirror advertises again.
    public func deviceBack(_ detail: String? = nil) async {
        guard relayState.deviceAway, !stopped else { return }
        relayState.deviceAway = false
        log.record(.deviceBack, detail: detail)
        guard engine.isAdvertising else { return }
        do {
            try await startAdvertising()
        } catch {
            log.record(.error, detail: "advertising again after the device came back: \(error.description)")
        }
    }

    /// A line of the relay's own in the event log.
    public func relayNote(_ detail: String) {
        log.record(.note, detail: detail)
    }

    /// `12.3 ms`.
    static func milliseconds(since start: ContinuousClock.Instant) -> String {
        let elapsed = ContinuousClock.now - start
        let (seconds, attoseconds) = elapsed.components
        let tenths = (seconds * 10_000) + attoseconds / 100_000_000_000_000
        return "\(tenths / 10).\(tenths % 10) ms"
    }
}
