import ArgumentParser
import BlueZ
import Bluetooth
import CaptureExport
import DBus
import Emulator
import FoundationEssentials
import Lexical
import Profile
import Relay
import Replica
import TextEscaping

#if canImport(Glibc)
    import Glibc
#endif

/// Stand between a phone and a real device: connect to the device as a central on one adapter, offer its mirror
/// on another, forward every operation both ways, and record the session as a profile.
struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Mirror a real device on one adapter while connected to it on another; forward, fault and record.",
        discussion: """
            DEVICE is an address (AA:BB:CC:DD:EE:FF), an advertised name (exactly), or NAME* for a name prefix. The relay \
            connects to it on --upstream-adapter first (so that a phone finds only the mirror), walks its GATT table, \
            then advertises the same advertisement, name and table on --adapter and forwards reads, writes, \
            subscriptions, notifications and indications, and the device's ATT errors. Faults (--scenario, the control \
            API) act on relayed operations as on an emulated device. When the device drops, the mirror's centrals are \
            disconnected and the relay attaches again when the device is back. On exit, -o writes the session as a \
            profile (table, values, the conversation as replay rules) and --capture as a btsnoop file. Exit 0 on \
            SIGINT/SIGTERM, 1 when the device cannot be reached, 2 for bad input. See docs/relay.md.
            """)

    @Argument(help: ArgumentHelp("The device: its address, its advertised name, or NAME* for a name prefix.", valueName: "address|name"))
    var device: String

    @Option(help: "Adapter the mirror advertises on (the phone's side): hciN or its address.")
    var adapter: String

    @Option(help: "Adapter that connects to the device (the device's side): hciN or its address.")
    var upstreamAdapter: String

    @Option(
        name: .shortAndLong, help: ArgumentHelp("On exit, write the session as a profile to this file.", valueName: "profile"))
    var output: String?

    @Option(help: ArgumentHelp("On exit, write the relayed ATT traffic as a btsnoop capture to this file.", valueName: "file"))
    var capture: String?

    @Option(
        help:
            "Address the mirror shows: own (the mirror adapter's, default) or device (the device's; needs a controller that can set its public address)."
    )
    var address: AddressMode = .own

    @Option(help: ArgumentHelp("Give up when the device has not been seen within this many seconds.", valueName: "seconds"))
    var scanTimeout: Double = 20

    @Option(
        help: ArgumentHelp(
            "The passkey the device displays when the relay pairs with it (six digits); without it, the control API's prompt (GET/POST /v1/pairing) asks.",
            valueName: "passkey"))
    var devicePasskey: String?

    @Option(help: "Whether the relay pairs with the device when it asks for security: accept (default) or refuse.")
    var devicePairing: DevicePairingMode = .accept

    @Option(
        help:
            "When the last phone disconnects from the mirror: keep the device's link (default), or reconnect it at once so that each phone session meets a freshly connected device."
    )
    var onPhoneDisconnect: PhoneDisconnect = .keep

    @OptionGroup var serving: ServingOptions

    enum AddressMode: String, ExpressibleByArgument, CaseIterable {
        case own, device
    }

    enum DevicePairingMode: String, ExpressibleByArgument, CaseIterable {
        case accept, refuse
    }

    enum PhoneDisconnect: String, ExpressibleByArgument, CaseIterable {
        case keep, reconnect
    }

    func validate() throws {
        guard DeviceQuery(parsing: device) != nil else {
            throw ValidationError("\(device.isEmpty ? "an empty name" : "\"\(device)\""): not an address nor a name")
        }
        if let devicePasskey, StrictParse.passkey(devicePasskey) == nil {
            throw ValidationError("--device-passkey: six decimal digits, not \"\(TerminalText.escaped(devicePasskey))\"")
        }
    }

    /// How the relay answers the device's pairing.
    var pairingSettings: DevicePairing {
        DevicePairing(passkey: devicePasskey.flatMap(StrictParse.passkey), accept: devicePairing == .accept)
    }

    func run() async throws {
        guard let query = DeviceQuery(parsing: device) else { throw Failure.badInput("\"\(device)\": not an address nor a name") }
        guard scanTimeout.isFinite, scanTimeout > 0, scanTimeout <= 600 else {
            throw Failure.badInput("--scan-timeout \(scanTimeout): more than 0, at most 600 seconds")
        }
        if let output { try ReplicaOutput.checkWritable(output) }
        if let capture { try ReplicaOutput.checkWritable(capture, option: "--capture") }

        let bus = DBusBus.ofThisCommand
        // One thread for both legs: the device's notifications are read where the mirror sends them, and a phone's
        // write reaches the device's connection without a thread hop.
        let loop: DBusEventLoop
        let stack: BlueZStack
        do {
            loop = try DBusEventLoop(name: "gattemu d-bus")
            stack = try await BlueZStack.connect(bus: bus, on: loop)
        } catch let error as BlueZError {
            throw Failure.runtime(error.description)
        } catch {
            throw Failure.runtime("\(error)")
        }
        // bluetoothd's EATT setting decides whether write commands can reach the device out of order: said once.
        let channelNote = ATTChannelSetting.note(await ATTChannelSetting.of(stack))
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
        let say: @Sendable (String) -> Void = { line in DescriptorOutput.writeError("gattemu: relay: \(TerminalText.escaped(line))\n") }
        let attachAgent: PairingAgent
        let upstream: Adapter
        do {
            upstream = try await stack.adapter(upstreamAdapter)
            attachAgent = try await PairingAgent.register(
                capability: DevicePairing.agentCapability,
                handler: DeviceAttachPairing(device: query, adapter: upstream.name, settings: pairingSettings, say: say), stack: stack)
        } catch {
            await stack.close()
            throw Failure.runtime(error.description)
        }
        do {
            session = try await RelaySession.attach(query, adapter: upstream, options: recorderOptions) { line in say(line) }
        } catch {
            await attachAgent.unregister()
            await stack.close()
            throw Failure.runtime(error.description)
        }
        await attachAgent.unregister()
        do {
            try await mirror.take(session.device, stack: stack)
        } catch {
            await session.device.disconnect()
            await stack.close()
            throw error
        }
        let recording = RelayRecording()
        let startedAt = Int64(Date().timeIntervalSince1970 * 1_000_000)
        var linkOptions = RelayLink.Options()
        linkOptions.pairing = pairingSettings
        linkOptions.reconnectWhenPhonesLeave = onPhoneDisconnect == .reconnect
        let link = RelayLink(
            device: session.device, table: session.recording.table, handles: session.handles, profile: session.profile, stack: stack,
            recording: recording, options: linkOptions)
        if !link.unmatched.isEmpty {
            DescriptorOutput.writeError("gattemu: relay: no device counterpart for \(link.unmatched.joined(separator: ", "))\n")
        }
        let note = mirror.note
        let outputs = RelayOutputs(profile: output, capture: capture, session: session, recording: recording, startedAt: startedAt)
        do {
            try await serving.serve(
                session.profile, adapter: mirror.adapter, loop: loop,
                attach: { emulator, log in
                    let snapshot: RelaySnapshotWriter? =
                        outputs.writesAnything
                        ? { @Sendable () throws(ControlFailure) -> RelaySnapshot in
                            let written = try outputs.write()
                            for problem in written.problems {
                                log.record(.error, detail: "relay: the recorded profile does not load (a gattemu bug): \(problem)")
                            }
                            return written.snapshot
                        } : nil
                    await emulator.relay(to: link, snapshot: snapshot)
                    link.start(emulator: emulator)
                    log.record(.note, detail: note)
                    log.record(.note, detail: channelNote)
                    log.record(
                        .note,
                        detail:
                            "relay: \(session.device.label) on \(upstreamAdapter) mirrored on \(mirror.adapter) (\(session.profile.services.count) services)"
                    )
                },
                detach: { _, log in
                    await link.stop(forget: true)
                    if link.droppedNotifications > 0 {
                        log.record(
                            .note, detail: "relay: \(link.droppedNotifications) notifications dropped (the mirror could not keep up)")
                    }
                })
        } catch {
            await link.stop(forget: true)
            try? await mirror.restore(stack: stack)
            await stack.close()
            throw error
        }
        do {
            try await mirror.restore(stack: stack)
        } catch {
            await stack.close()
            throw error
        }
        await stack.close()
        guard outputs.writesAnything else { return }
        let written: RelayOutputs.Written
        do {
            written = try outputs.write(rescuing: true)
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

/// What `--address` does to the mirror's controller: `own` leaves its address (and says so in the event log);
/// `device` gives it the device's public address before the mirror starts and its own back on exit
/// (docs/relay.md).
struct MirrorAddress {
    let mode: RelayCommand.AddressMode
    /// The adapter the mirror serves on: the kernel may announce a controller under another index after the change.
    private(set) var adapter: String
    /// The mirror controller's own address, to put back; set while it shows the device's.
    private(set) var original: BluetoothAddress?
    /// The event log's note on the address the phone sees.
    private(set) var note = ""

    /// Before the device is reached: with `device`, refuses (exit 1) a controller that cannot set its public address.
    static func prepare(_ mode: RelayCommand.AddressMode, adapter: String, stack: BlueZStack) async throws -> MirrorAddress {
        let named: Adapter
        do {
            named = try await stack.adapter(adapter)
        } catch {
            throw Failure.runtime(error.description)
        }
        if mode == .device {
            do {
                guard try await ControllerManagement.named(named.name).configuration().supportsPublicAddress else {
                    throw Failure.runtime(
                        "--address device: \(named.name) cannot take the device's address: the kernel offers no public-address "
                            + "configuration for this controller (use one whose driver can set it, or --address own)")
                }
            } catch let error as ManagementError {
                throw Failure.runtime("--address device: \(error.description)")
            }
        }
        return MirrorAddress(
            mode: mode, adapter: named.name, note: "relay: the mirror advertises from \(named.name)'s own address \(named.address)")
    }

    /// Once the device is known: with `device`, the mirror's controller takes its public address; a random (static)
    /// one cannot be a public address, so that is refused (exit 1). With `own`, only the note.
    mutating func take(_ device: RemoteDevice, stack: BlueZStack) async throws {
        let properties = device.properties
        guard mode == .device else {
            note +=
                ", not the device's \(device.label): apps that check the address (a Noke name embeds it; some put it in "
                + "manufacturer data) will not take it for the device (--address device)"
            return
        }
        guard let address = properties.address, properties.addressType == .public else {
            throw Failure.runtime(
                "--address device: \(device.label) has a \(properties.addressType?.description ?? "unknown") address type: a controller's "
                    + "public address cannot take it (the phone would see a public address, not the device's random one); use --address own"
            )
        }
        let before: Adapter
        let after: Adapter
        do {
            before = try await stack.adapter(adapter)
            after = try await stack.changePublicAddress(of: adapter, to: address)
        } catch let error as ManagementError {
            throw Failure.runtime("--address device: \(error.description)")
        } catch {
            throw Failure.runtime("--address device: \(error)")
        }
        if before.address != address { original = before.address }
        adapter = after.name
        note =
            "relay: the mirror advertises from the device's own address \(address) on \(after.name) (its own, \(before.address), back on exit)"
    }

    /// On exit: the mirror's controller gets its own address back.
    mutating func restore(stack: BlueZStack) async throws {
        guard let original else { return }
        do {
            adapter = try await stack.changePublicAddress(of: adapter, to: original).name
            self.original = nil
        } catch {
            throw Failure.runtime("--address device: \(adapter) keeps the device's address: \(error.description)")
        }
    }
}
