import ArgumentParser
import BlueZ
import Bluetooth
import CaptureExport
import DBus
import Emulator
import FoundationEssentials
import Profile
import Relay
import Replica

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

    @OptionGroup var serving: ServingOptions

    enum AddressMode: String, ExpressibleByArgument, CaseIterable {
        case own, device
    }

    func validate() throws {
        guard DeviceQuery(parsing: device) != nil else {
            throw ValidationError("\(device.isEmpty ? "an empty name" : "\"\(device)\""): not an address nor a name")
        }
    }

    func run() async throws {
        guard let query = DeviceQuery(parsing: device) else { throw Failure.badInput("\"\(device)\": not an address nor a name") }
        guard scanTimeout.isFinite, scanTimeout > 0, scanTimeout <= 600 else {
            throw Failure.badInput("--scan-timeout \(scanTimeout): more than 0, at most 600 seconds")
        }
        if let output { try ReplicaOutput.checkWritable(output) }
        if let capture { try ReplicaOutput.checkWritable(capture) }
        if address == .device {
            throw Failure.runtime(
                "--address device: not supported yet: gattemu cannot set the mirror controller's public address (use --address own)")
        }

        let bus = ProcessInfo.processInfo.environment["GATTEMU_BUS_ADDRESS"].map(DBusBus.address) ?? .system
        let stack: BlueZStack
        do {
            stack = try await BlueZStack.connect(bus: bus)
        } catch {
            throw Failure.runtime(error.description)
        }
        var recorderOptions = DeviceRecorder.Options()
        recorderOptions.scanTimeout = .milliseconds(Int64(scanTimeout * 1000))
        // LE connection setup fails now and then on a busy radio: more, shorter attempts than a clone's.
        recorderOptions.connectTimeout = .seconds(15)
        recorderOptions.connectAttempts = 5
        let session: RelaySession
        do {
            let upstream = try await stack.adapter(upstreamAdapter)
            session = try await RelaySession.attach(query, adapter: upstream, options: recorderOptions) { line in
                DescriptorOutput.writeError("gattemu: relay: \(line)\n")
            }
        } catch let error as BlueZError {
            await stack.close()
            throw Failure.runtime(error.description)
        } catch {
            await stack.close()
            throw Failure.runtime("\(error)")
        }
        let recording = RelayRecording()
        let startedAt = Int64(Date().timeIntervalSince1970 * 1_000_000)
        let link = RelayLink(
            device: session.device, table: session.recording.table, handles: session.handles, profile: session.profile, stack: stack,
            recording: recording)
        if !link.unmatched.isEmpty {
            DescriptorOutput.writeError("gattemu: relay: no device counterpart for \(link.unmatched.joined(separator: ", "))\n")
        }
        do {
            try await serving.serve(
                session.profile, adapter: adapter,
                attach: { emulator, log in
                    await emulator.relay(to: link)
                    link.start(emulator: emulator)
                    log.record(
                        .note,
                        detail:
                            "relay: \(session.device.label) on \(upstreamAdapter) mirrored on \(adapter) (\(session.profile.services.count) services)"
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
            await stack.close()
            throw error
        }
        await stack.close()
        let replica = session.recordedReplica(recording)
        if let output {
            let result = ReplicaProfile(replica).build()
            try ReplicaOutput.deliver(
                result, to: output, header: ["relayed \(session.device.label): \(replica.conversation.count) operations recorded"])
        }
        if let capture {
            let central =
                replica.conversation.lazy.compactMap { event -> BluetoothAddress? in
                    if case .connected(let address?) = event.kind { address } else { nil }
                }.first ?? .zero
            let written = BTSnoopExport.write(replica, central: central, start: startedAt)
            do {
                try Data(written.bytes).write(to: URL(filePath: capture), options: .atomic)
            } catch {
                throw Failure.runtime("cannot write \(capture): \(error)")
            }
            let notes = written.notes.map { "\n- " + $0 }.joined()
            DescriptorOutput.writeError("gattemu: relay: capture of \(written.frames) records written to \(capture)\(notes)\n")
        }
    }
}
