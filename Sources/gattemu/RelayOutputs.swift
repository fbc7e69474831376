import Bluetooth
import CaptureExport
import Emulator
import FoundationEssentials
import PrivateFiles
import Profile
import Relay
import Replica

/// Where `gattemu relay` writes the session: the profile (`-o`) and the btsnoop capture (`--capture`), on exit
/// and for each `POST /v1/relay/snapshot`. Writes are atomic (a reader sees the old file or the new one), private
/// (``PrivateFile``) and one at a time without a lock: the emulator writes one snapshot at a time, and the exit's write
/// comes after the last (``RelayedDevice/detach(from:)`` ends them first, ``Emulator/endRelaySnapshots()``).
final class RelayOutputs: Sendable {
    /// What one write did: the snapshot the API answers, report lines for the terminal, and the problems of a
    /// profile that does not load (a gattemu bug: it is written all the same).
    struct Written {
        var snapshot: RelaySnapshot
        var profileReport: [String] = []
        var captureReport: [String] = []
        var problems: [String] = []
        /// What could not be written where asked, and where it went instead.
        var rescued: [String] = []
    }

    let profile: String?
    let capture: String?
    private let session: RelaySession
    /// The relay's start, in microseconds since 1970 (the capture's clock).
    private let startedAt: Int64

    init(profile: String?, capture: String?, session: RelaySession, startedAt: Int64) {
        self.profile = profile
        self.capture = capture
        self.session = session
        self.startedAt = startedAt
    }

    var writesAnything: Bool { profile != nil || capture != nil }

    /// The session so far (`conversation`, the link's recording), written to both paths given. `rescuing` (at exit,
    /// the session's last chance): a path that cannot take its file gets it in a new private folder instead
    /// (``PrivateFile/rescueFolder(environment:)``), said in ``Written/rescued``.
    func write(_ conversation: RelayRecording.Conversation, rescuing: Bool = false) throws(ControlFailure) -> Written {
        let replica = session.recordedReplica(conversation)
        var rescue: String?
        var written = Written(
            snapshot: RelaySnapshot(operations: replica.conversation.count, notRecorded: conversation.dropped))
        if let profile {
            let result = ReplicaProfile(replica).build()
            do {
                _ = try ProfileLoader.load(json: result.text, file: profile)
            } catch {
                written.problems.append("\(error)")
            }
            let path = try place(Array(result.text.utf8), at: profile, rescuing: rescuing, into: &rescue, &written.rescued)
            written.snapshot.profile = path
            written.profileReport =
                ["relayed \(session.device.label): \(replica.conversation.count) operations recorded", "profile written to \(path)"]
                + result.report.map { "- " + $0 }
        }
        if let capture {
            let central =
                replica.conversation.lazy.compactMap { event -> BluetoothAddress? in
                    if case .connected(let address?) = event.kind { address } else { nil }
                }.first ?? .zero
            let export = BTSnoopExport.write(replica, central: central, start: startedAt)
            let path = try place(export.bytes, at: capture, rescuing: rescuing, into: &rescue, &written.rescued)
            written.snapshot.capture = path
            written.snapshot.captureRecords = export.frames
            written.captureReport = ["capture of \(export.frames) records written to \(path)"] + export.notes.map { "- " + $0 }
        }
        return written
    }

    /// Writes privately (0600: a recording holds the device's conversation, a lock's unlock exchange) to `path`, or
    /// when `rescuing` and that fails, to the rescue folder (made on the first need); the path written.
    private func place(
        _ bytes: [UInt8], at path: String, rescuing: Bool, into rescue: inout String?, _ rescued: inout [String]
    ) throws(ControlFailure) -> String {
        do {
            try PrivateFile.write(bytes, to: path)
            return path
        } catch {
            guard rescuing else { throw ControlFailure(.unavailable, "cannot write \(error)") }
            do {
                let folder = try rescue ?? PrivateFile.rescueFolder(environment: ProcessInfo.processInfo.environment)
                rescue = folder
                let instead = folder + "/" + (path.split(separator: "/").last.map(String.init) ?? "session")
                try PrivateFile.write(bytes, to: instead)
                rescued.append("cannot write \(error): written to \(instead) instead")
                return instead
            } catch let second {
                throw ControlFailure(.unavailable, "cannot write \(error), nor anywhere else (\(second)): the session is lost")
            }
        }
    }
}
