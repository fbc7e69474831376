import BlueZ
import Bluetooth
import Dispatch
import Profile

/// What ``RelayResponder`` keeps about the device it forwards to: what it is subscribed to for the mirror, whether
/// the device is away, and how far its link is behind.
struct RelayState: Sendable {
    /// The characteristics the device is subscribed to for the mirror's centrals: each while any central is
    /// subscribed to it (who is, the central registry knows).
    var deviceSubscribed: Set<CharacteristicID> = []
    /// The link to the device is down: the mirror does not advertise and refuses what arrives.
    var deviceAway = false
    /// Writes the recording so far (`POST /v1/relay/snapshot`); nil when the relay has nowhere to write it.
    var snapshotWriter: RelaySnapshotWriter?
    /// A snapshot is being written: another request meanwhile is refused (409), not queued.
    var snapshotting = false
    /// The relay is stopping (``Emulator/endRelaySnapshots()``): it writes the session itself, and refuses snapshots.
    var snapshotsEnded = false
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
        answer(with: RelayResponder(upstream: upstream, snapshot: snapshot))
    }

    /// The relay's responder; nil when the profile answers.
    var relayResponder: RelayResponder? { pipeline.responder as? RelayResponder }

    /// What the relay keeps about its device (a copy, for tests); empty when this is no relay.
    var relayState: RelayState { relayResponder?.state ?? RelayState() }

    /// `POST /v1/relay/snapshot`: the recording so far written where the relay writes it on exit. The writing runs on
    /// a Dispatch thread, off the D-Bus loop and the cooperative pool (a long session makes a large profile; two
    /// requests holding both cooperative threads of a 2-core machine stalled every relayed operation); 409 when this is
    /// no relay, it writes nothing, or a snapshot is being written.
    public func relaySnapshot() async throws(ControlFailure) -> RelaySnapshot {
        guard let relay = relayResponder else {
            throw ControlFailure(.conflict, "not a relay: only `gattemu relay` records a session to snapshot")
        }
        guard let writer = relay.state.snapshotWriter else {
            throw ControlFailure(.conflict, "the relay was started without -o PROFILE or --capture FILE: there is nowhere to write")
        }
        guard !relay.state.snapshotsEnded else {
            throw ControlFailure(.conflict, "the relay is stopping: it writes the whole session as it exits")
        }
        guard !relay.state.snapshotting else {
            throw ControlFailure(.conflict, "a snapshot is being written: ask again once it is done")
        }
        relay.state.snapshotting = true
        let work = await writer()
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<RelaySnapshot, ControlFailure>, Never>) in
            DispatchQueue.global(qos: .utility).async {
                do throws(ControlFailure) {
                    continuation.resume(returning: .success(try work()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        relay.state.snapshotting = false
        relay.snapshotWritten()
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

    /// The relay is stopping and will write the session itself: snapshots asked from now on are refused, and this
    /// returns once the one being written, if any, is written (so that its older recording cannot replace the exit's:
    /// the files are written one at a time without a lock). Nothing to do for an emulator that is no relay.
    public func endRelaySnapshots() async {
        guard let relay = relayResponder else { return }
        relay.state.snapshotsEnded = true
        guard relay.state.snapshotting else { return }
        await withCheckedContinuation { relay.waitingForSnapshot.append($0) }
    }

    /// The relay's device answered a link check (``RelayResponder/checkLinkIfBusy(in:)``).
    func relayLinkChecked(_ asked: String?, before: Int, start: ContinuousClock.Instant) {
        relayResponder?.linkChecked(asked, before: before, start: start, in: self)
    }

    /// A notification or indication the device sent: logged as the relayed leg, then sent to the mirror's
    /// subscribers through the fault engine as any notification.
    public func relayNotification(_ characteristic: CharacteristicID, value: [UInt8], indicate: Bool) async {
        log.record(.relayed, characteristic: characteristic, value: value, detail: "device \(indicate ? "indicated" : "notified")")
        guard !stopped, profile.characteristic(characteristic) != nil else { return }
        engine.store(value, for: characteristic)
        await perform(
            .notify(characteristic: characteristic, value: value, target: .allSubscribers, indicate: indicate), central: latestCentral)
    }

    /// The link to the device went down: the mirror stops advertising and its centrals are disconnected (a real
    /// device gone away takes its links with it).
    public func deviceLost(_ reason: String) async {
        guard let relay = relayResponder, !relay.state.deviceAway, !stopped else { return }
        relay.state.deviceAway = true
        relay.state.deviceSubscribed = []
        relay.state.commandsGone(upTo: relay.state.commandsSent)  // what waited for the link went with it
        log.record(.deviceLost, detail: reason)
        await stopAdvertising()
        for central in centrals.connected {
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
        guard let relay = relayResponder, relay.state.deviceAway, !stopped else { return }
        relay.state.deviceAway = false
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
