import ArgumentParser
import Bluetooth
import Capture
import CaptureImport
import Emulator
import Profile
import Replica
import TextEscaping

#if canImport(Glibc)
    import Glibc
#endif

/// Reconstruct a device from an HCI capture of a central talking to it, as a profile that replays it.
struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Turn an HCI capture of a phone (or any central) talking to a device into a profile that emulates the device.",
        discussion: """
            CAPTURE is Android's btsnoop_hci.log, an iPhone's or Mac's PacketLogger .pklg, a `btmon -w` file, or \
            pcap/pcapng with Bluetooth HCI H4 (187, 201) or Linux monitor (254) packets. The profile holds the advertisement, the GATT table (handles pinned where BlueZ \
            can reproduce them), the values read, and rules that replay what the device answered to each write. The \
            report (what was reconstructed, what was missing) goes to standard output, or to standard error when the \
            profile does. Exit 0 when the profile was written, 1 when it could not be, 2 for bad input (an unreadable \
            capture, no such device, several devices and no --device). See docs/import.md.
            """)

    @Argument(help: ArgumentHelp("The capture file.", valueName: "capture"))
    var capture: String

    @Option(name: .shortAndLong, help: ArgumentHelp("Write the profile to this file (default: standard output).", valueName: "profile"))
    var output: String?

    @Option(
        help: ArgumentHelp(
            "The device to import: its address, a name (or the start of one) it advertised or had read, or 'connection N' for a peer --list shows with no address. Needed when the capture talks to several.",
            valueName: "address|name|connection N"))
    var device: String?

    @Flag(help: "List the devices in the capture (addresses, names, advertising reports, connections, ATT operations) and stop.")
    var list = false

    @Option(help: "Replay recorded notifications with the gaps seen (recorded) or at once (immediate).")
    var timing: ReplicaProfile.Timing = .immediate

    @Option(
        help:
            "What the profile does with a write the recording does not have: ignore (accept it), error (an ATT error), or nearest (answer as the closest recorded write)."
    )
    var otherwise: ReplicaProfile.Otherwise = .ignore

    @Flag(help: "Do not pin ATT handles even where BlueZ could reproduce the device's layout.")
    var noPinHandles = false

    func run() throws {
        if let output, !list { try ReplicaOutput.checkWritable(output) }
        // Two passes, so that memory grows with the chosen device's traffic and not the capture's: a survey to
        // choose the device, then that device's connections and advertising only.
        let survey: CaptureTrace
        do {
            survey = try CaptureTrace.read(path: capture, scope: .survey)
        } catch {
            throw Failure.badInput("\(capture): \(error)")
        }
        if list {
            print(Self.listing(survey, capture: capture), terminator: "")
            return
        }
        let choice: CaptureImport.Choice
        do {
            choice = try CaptureImport.select(device, in: survey)
        } catch {
            var message = "\(capture): \(error)"
            if case .noPeripheral = error, let problem = survey.problems.first {
                message += " (the capture is damaged: \(problem))"
            }
            let lines = message.split(separator: "\n", omittingEmptySubsequences: false)
            throw Failure.badInput(lines.map { TerminalText.escaped(String($0)) }.joined(separator: "\n"))
        }
        let trace: CaptureTrace
        do {
            trace = try CaptureTrace.read(path: capture, scope: CaptureImport.scope(for: choice, in: survey))
        } catch {
            throw Failure.runtime("\(capture): read again: \(error)")
        }
        let replica = CaptureImport.replica(of: choice, in: trace, source: Self.fileName(capture))
        var options = ReplicaProfile.Options()
        options.timing = timing
        options.otherwise = otherwise
        options.pinHandles = !noPinHandles
        let result = ReplicaProfile(replica, options: options).build()
        try ReplicaOutput.deliver(result, to: output, header: [Self.summary(replica, choice: choice, trace: trace)])
    }

    static func fileName(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    /// The report's first line: what was imported.
    static func summary(_ replica: DeviceReplica, choice: CaptureImport.Choice, trace: CaptureTrace) -> String {
        let characteristics = replica.characteristics
        var line = "imported " + (replica.address?.description ?? "an unknown peer")
        if let name = replica.name { line += " \"\(name)\"" }
        var counts: [String: Int] = [:]
        for event in replica.conversation {
            switch event.kind {
            case .write: counts["writes", default: 0] += 1
            case .notification: counts["notifications", default: 0] += 1
            case .read: counts["reads", default: 0] += 1
            case .subscribe: counts["subscriptions", default: 0] += 1
            default: break
            }
        }
        line +=
            ": \(replica.services.count) services, \(characteristics.count) characteristics (\(characteristics.count { $0.characteristic.value != nil }) with values), "
        line += "\(choice.connections.count) connection\(choice.connections.count == 1 ? "" : "s") with "
        line += ["writes", "notifications", "reads", "subscriptions"].map { "\(counts[$0] ?? 0) \($0)" }.joined(separator: ", ")
        if let mtu = replica.mtu { line += ", ATT MTU \(mtu)" }
        return line
    }

    /// `--list`: the capture and its devices.
    static func listing(_ trace: CaptureTrace, capture: String) -> String {
        var text = "\(capture): \(trace.format), \(trace.frames) frames"
        if let first = trace.statistics.firstTimestamp, let last = trace.statistics.lastTimestamp, last >= first {
            text += ", \((last - first) / 1_000_000) s"
        }
        text += ", \(trace.connections.count) connections, \(trace.attPDUCounts.values.reduce(0, +)) ATT PDUs\n"
        let choices = CaptureImport.choices(in: trace)
        if choices.isEmpty {
            text += "no peripheral: no connection to one and no connectable advertising\n"
        }
        for choice in choices {
            text += "  " + choice.description + "\n"  // escapes the names itself
        }
        if trace.untrackedAdvertisingReports > 0 {
            text +=
                "and \(trace.untrackedAdvertisingReports) advertising reports of advertisers past the first \(CaptureTrace.maximumAdvertisers), not listed "
                + "(a device among them that was connected to is listed by its connections)\n"
        }
        if trace.problemCount > 0 {
            text += "damaged: \(trace.problemCount) problems, the first: \(trace.problems.first.map { "\($0)" } ?? "?")\n"
        }
        return text
    }
}
