import BlueZ
import Bluetooth
import DBus
import Emulator
import FoundationEssentials
import Profile
import Relay
import Replica
import TextEscaping

#if canImport(Glibc)
    import Glibc
#endif

/// What a relay needs to start: the device to find and on which adapter, where its mirror is served, and what is
/// recorded. `gattemu relay`'s options make one; so does a rig file's `relay` entry (docs/rig.md).
struct RelaySettings: Sendable {
    var device: DeviceQuery
    /// The mirror's adapter (the phone's side).
    var adapter: String
    /// The adapter that connects to the device.
    var upstreamAdapter: String
    var output: String?
    var capture: String?
    var address: RelayCommand.AddressMode = .own
    var scanTimeout: Double = 20
    var pairing = DevicePairing()
    var reconnectWhenPhonesLeave = false

    /// Whether `seconds` is a scan timeout a relay takes: more than 0, at most 600 (`--scan-timeout`, a rig's `scanTimeout`).
    static func acceptsScanTimeout(_ seconds: Double) -> Bool { seconds.isFinite && seconds > 0 && seconds <= 600 }

    /// Bad input (exit 2) before anything is touched: the scan timeout's range and outputs that cannot be written.
    func check() throws {
        guard Self.acceptsScanTimeout(scanTimeout) else {
            throw Failure.badInput("--scan-timeout \(scanTimeout): more than 0, at most 600 seconds")
        }
        if let output { try ReplicaOutput.checkWritable(output) }
        if let capture { try ReplicaOutput.checkWritable(capture, option: "--capture") }
    }

    /// Connects to the device (on a connection of `loop`, the loop the mirror's emulator will run on: one thread for
    /// both legs), reads its table and prepares the mirror's address. `say` prints what happens meanwhile.
    func start(on loop: DBusEventLoop, say: @escaping @Sendable (String) -> Void) async throws -> RelayedDevice {
        let stack: BlueZStack
        do {
            stack = try await BlueZStack.connect(bus: DBusBus.ofThisCommand, on: loop)
        } catch {
            throw Failure.runtime(error.description)
        }
        // bluetoothd's EATT setting decides whether write commands can reach the device out of order: said once.
        let channelSetting = await ATTChannelSetting.of(stack)
        let channelNote = ATTChannelSetting.note(channelSetting)
        var mirror: MirrorAddress
        do {
            mirror = try await MirrorAddress.prepare(address, adapter: adapter, stack: stack)
        } catch {
            await stack.close()
            throw error
        }
        var recorderOptions = DeviceRecorder.Options()
        recorderOptions.scanTimeout = .milliseconds(Int64(scanTimeout * 1000))
        // LE connection setup fails now and then on a busy radio: more, shorter attempts than a clone's.
        recorderOptions.connectTimeout = .seconds(15)
        recorderOptions.connectAttempts = 5
        let session: RelaySession
        // bluetoothd pairs with the device when it refuses a read for security: an agent must answer it while the
        // table is read. The emulator's agent takes over once the mirror runs.
        let attachAgent: PairingAgent
        let upstream: Adapter
        do {
            upstream = try await stack.adapter(upstreamAdapter)
            attachAgent = try await PairingAgent.register(
                capability: DevicePairing.agentCapability,
                handler: DeviceAttachPairing(device: device, adapter: upstream.name, settings: pairing, say: say), stack: stack)
        } catch {
            await stack.close()
            throw Failure.runtime(error.description)
        }
        do {
            session = try await RelaySession.attach(device, adapter: upstream, options: recorderOptions) { line in say(line) }
        } catch {
            await attachAgent.unregister()
            await stack.close()
            throw Failure.runtime(
                error.description
                    + (ATTChannelSetting.hint(
                        after: error, setting: channelSetting, enhancedCredits: KernelBluetoothParameters.enhancedCredits()) ?? ""))
        }
        await attachAgent.unregister()
        do {
            try await mirror.take(session.device, stack: stack)
        } catch {
            await session.device.disconnect()
            await stack.close()
            throw error
        }
        let startedAt = Int64(Date().timeIntervalSince1970 * 1_000_000)
        var linkOptions = RelayLink.Options()
        linkOptions.pairing = pairing
        linkOptions.reconnectWhenPhonesLeave = reconnectWhenPhonesLeave
        let link = RelayLink(
            device: session.device, table: session.recording.table, handles: session.handles, profile: session.profile, stack: stack,
            options: linkOptions)
        if !link.unmatched.isEmpty { say("no device counterpart for \(link.unmatched.map(\.rawValue).joined(separator: ", "))") }
        return RelayedDevice(
            settings: self, stack: stack, session: session, link: link, mirror: mirror, channelNote: channelNote,
            outputs: RelayOutputs(profile: output, capture: capture, session: session, startedAt: startedAt))
    }
}

/// A relay whose device is connected and whose table is read: served as a mirror (its ``profile`` on
/// ``adapter``) by an emulator it is attached to, and finished when the serving ends.
struct RelayedDevice: Sendable {
    let settings: RelaySettings
    let stack: BlueZStack
    let session: RelaySession
    let link: RelayLink
    let mirror: MirrorAddress
    let channelNote: String
    let outputs: RelayOutputs

    /// The mirror's profile: the device's table, advertisement and values.
    var profile: DeviceProfile { session.profile }
    /// The adapter the mirror is served on (the kernel may have renamed it when the address changed).
    var adapter: String { mirror.adapter }

    /// Makes `emulator` the mirror: the device answers through it (before it starts).
    func attach(to emulator: Emulator, log: EventLog) async {
        let outputs = self.outputs
        let snapshot: RelaySnapshotWriter? =
            outputs.writesAnything
            ? { @Sendable [link] () async -> RelaySnapshotWork in
                let conversation = await link.recordedConversation()
                return { @Sendable () throws(ControlFailure) -> RelaySnapshot in
                    let written = try outputs.write(conversation)
                    for problem in written.problems {
                        log.record(.error, detail: "relay: the recorded profile does not load (a gattemu bug): \(problem)")
                    }
                    return written.snapshot
                }
            } : nil
        await emulator.relay(to: link, snapshot: snapshot)
        await link.start(emulator: emulator)
        await emulator.relayNote(mirror.note)
        await emulator.relayNote(channelNote)
        // A channel behind a published PSM is not relayed: said in the event log, where a tester watching the relay looks.
        for note in session.replica.l2capChannelNotes { await emulator.relayNote("relay: " + note) }
        await emulator.relayNote(
            "relay: \(session.device.label) on \(settings.upstreamAdapter) mirrored on \(mirror.adapter) (\(session.profile.services.count) services)"
        )
    }

    /// The mirror stopped: the device's link goes, and the control API's snapshots end (``finish(failed:)`` writes
    /// the whole session after the last of them).
    func detach(from emulator: Emulator) async {
        await emulator.endRelaySnapshots()
        await link.stop(forget: true)
        let dropped = await link.droppedNotifications
        if dropped > 0 { await emulator.relayNote("relay: \(dropped) notifications dropped (the mirror could not keep up)") }
    }

    /// After the serving ended (or failed: `rescuing`): the mirror's controller gets its address back, the
    /// connection closes, and the session is written (-o, --capture). A problem writing is a runtime failure.
    func finish(failed: Bool = false) async throws {
        if failed { await link.stop(forget: true) }
        var mirror = self.mirror
        do {
            try await mirror.restore(stack: stack)
        } catch {
            await stack.close()
            if failed { return }
            throw error
        }
        await stack.close()
        guard !failed, outputs.writesAnything else { return }
        let written: RelayOutputs.Written
        do {
            written = try outputs.write(await link.recordedConversation(), rescuing: true)
        } catch {
            throw Failure.runtime(error.message)
        }
        if !written.profileReport.isEmpty {
            var bytes = Array((written.profileReport.map(TerminalText.escaped).joined(separator: "\n") + "\n").utf8)
            DescriptorOutput.writeAll(&bytes, to: STDOUT_FILENO)
        }
        if !written.captureReport.isEmpty {
            DescriptorOutput.writeError(
                written.captureReport.map { "gattemu: relay: " + TerminalText.escaped($0) }.joined(separator: "\n") + "\n")
        }
        if !written.problems.isEmpty {
            throw Failure.runtime(
                "the recorded profile does not load (a gattemu bug; please report it):\n" + written.problems.joined(separator: "\n"))
        }
        if !written.rescued.isEmpty { throw Failure.runtime(written.rescued.joined(separator: "; ")) }
    }
}
