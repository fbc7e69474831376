import ArgumentParser
import BlueZ
import DBus
import DeviceClone
import Emulator
import FoundationEssentials
import Profile
import Relay
import Replica

#if canImport(Glibc)
    import Glibc
#endif

/// Record a live device as a BlueZ central and write the profile that emulates it.
///
/// Scans (LE) for the device, records its advertisement, connects, walks its GATT table, reads everything
/// readable, optionally listens to everything that notifies, disconnects, and writes a profile made with
/// the replica writer (see docs/clone.md).
struct Clone: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clone",
        abstract: "Record a live device as a central and write a profile that emulates it.",
        discussion: """
            DEVICE is an address (AA:BB:CC:DD:EE:FF), an advertised name (exactly), or NAME* for names that start \
            with NAME; several devices matching is an error that lists them. The report goes to standard output, \
            or to standard error when the profile does. Exit 0 when the profile was written, 1 when the device \
            could not be recorded (no bluetoothd, no such adapter, not found, connection failed), 2 for bad input.
            """)

    @Argument(help: ArgumentHelp("The device: its address, its advertised name, or NAME* for a name prefix.", valueName: "address|name"))
    var device: String

    @Option(help: "Adapter to scan and connect with: hciN or its address.")
    var adapter: String

    @Option(name: .shortAndLong, help: ArgumentHelp("Write the profile to this file (default: standard output).", valueName: "profile"))
    var output: String?

    @Option(
        help: ArgumentHelp(
            "Subscribe to every characteristic that notifies or indicates and record what arrives for this many seconds.",
            valueName: "seconds"))
    var listen: Double = 0

    @Option(help: ArgumentHelp("Give up when the device has not been seen within this many seconds.", valueName: "seconds"))
    var scanTimeout: Double = 20

    @Option(help: "Replay recorded notifications with the gaps seen (recorded) or at once (immediate).")
    var timing: ReplicaProfile.Timing = .immediate

    @Option(
        help:
            "What the profile does with a write the recording does not have: ignore (accept it), error (an ATT error), or nearest (answer as the closest recorded write)."
    )
    var otherwise: ReplicaProfile.Otherwise = .ignore

    func run() async throws {
        guard let query = DeviceQuery(parsing: device) else {
            throw Failure.badInput(
                "\(device.isEmpty ? "an empty name" : "\"\(device)\""): not an address (AA:BB:CC:DD:EE:FF) nor a name (1 to 248 bytes, no control characters)"
            )
        }
        guard listen.isFinite, (0...3600).contains(listen) else { throw Failure.badInput("--listen \(listen): 0 to 3600 seconds") }
        guard scanTimeout.isFinite, scanTimeout > 0, scanTimeout <= 600 else {
            throw Failure.badInput("--scan-timeout \(scanTimeout): more than 0, at most 600 seconds")
        }
        if let output { try ReplicaOutput.checkWritable(output) }

        var options = DeviceRecorder.Options()
        // Once heard, the device is listened to for two of Linux's advertising rotations (2 s an instance): a device
        // with two advertising sets on a controller that rotates them shows the second only after the first's turn.
        options.settle = .milliseconds(4_500)
        options.scanTimeout = .milliseconds(Int64(scanTimeout * 1000))
        options.listen = .milliseconds(Int64(listen * 1000))
        let bus = DBusBus.ofThisCommand
        let stack: BlueZStack
        do {
            stack = try await BlueZStack.connect(bus: bus)
        } catch {
            throw Failure.runtime(error.description)
        }
        let recording: CentralRecording
        do {
            let chosen = try await stack.adapter(adapter)
            recording = try await DeviceRecorder.record(query, adapter: chosen, options: options) { line in
                DescriptorOutput.writeError("gattemu: \(line)\n")
            }
        } catch let error as BlueZError {
            await stack.close()
            throw Failure.runtime(error.description)
        } catch let error as CentralError {
            let hint =
                ATTChannelSetting.mayConcern(error)
                ? ATTChannelSetting.hint(
                    after: error, setting: await ATTChannelSetting.of(stack), enhancedCredits: KernelBluetoothParameters.enhancedCredits())
                : nil
            await stack.close()
            throw Failure.runtime(error.description + (hint ?? ""))
        } catch {
            await stack.close()
            throw Failure.runtime("\(error)")
        }
        await stack.close()

        let replica = CloneReplica.make(recording)
        var profileOptions = ReplicaProfile.Options()
        profileOptions.timing = timing
        profileOptions.otherwise = otherwise
        let result = ReplicaProfile(replica, options: profileOptions).build()
        try ReplicaOutput.deliver(result, to: output, header: Self.summary(recording, replica: replica))
    }

    /// The report's first lines: what was recorded.
    static func summary(_ recording: CentralRecording, replica: DeviceReplica) -> [String] {
        let characteristics = recording.table.characteristics
        let values = recording.reads.filter { if case .value = $0.read.outcome { true } else { false } }.count
        let refused = recording.reads.count - values
        var line = "cloned \(replica.address?.description ?? "?")"
        if let name = replica.name { line += " \"\(name)\"" }  // escaped with the report (ReplicaOutput)
        if let type = replica.addressType { line += " (\(type))" }
        line +=
            " on \(recording.adapterName): \(recording.table.services.count) services, \(characteristics.count) characteristics, "
            + "\(values) values read" + (refused > 0 ? ", \(refused) reads refused" : "")
        if recording.listened > .zero {
            let tenths = (recording.listened / .milliseconds(100)).rounded()
            line += ", \(recording.notifications.count) notifications in \(Int(tenths) / 10).\(Int(tenths) % 10) s"
        }
        return [line]
    }
}
