import Bluetooth
import CaptureExport
import Emulator
import FoundationEssentials
import Profile
import Relay
import Replica
import Synchronization

/// Where `gattemu relay` writes the session: the profile (`-o`) and the btsnoop capture (`--capture`), on exit
/// and for each `POST /v1/relay/snapshot`. Writes are atomic (a reader sees the old file or the new one) and
/// one at a time.
final class RelayOutputs: Sendable {
    /// What one write did: the snapshot the API answers, report lines for the terminal, and the problems of a
    /// profile that does not load (a gattemu bug: it is written all the same).
    struct Written {
        var snapshot: RelaySnapshot
        var profileReport: [String] = []
        var captureReport: [String] = []
        var problems: [String] = []
    }

    let profile: String?
    let capture: String?
    private let session: RelaySession
    private let recording: RelayRecording
    /// The relay's start, in microseconds since 1970 (the capture's clock).
    private let startedAt: Int64
    private let writing = Mutex(())

    init(profile: String?, capture: String?, session: RelaySession, recording: RelayRecording, startedAt: Int64) {
        self.profile = profile
        self.capture = capture
        self.session = session
        self.recording = recording
        self.startedAt = startedAt
    }

    var writesAnything: Bool { profile != nil || capture != nil }

    /// The session so far, written to both paths given.
    func write() throws(ControlFailure) -> Written {
        try writing.withLock { _ throws(ControlFailure) -> Written in
            let replica = session.recordedReplica(recording)
            var written = Written(
                snapshot: RelaySnapshot(operations: replica.conversation.count, notRecorded: recording.conversation.dropped))
            if let profile {
                let result = ReplicaProfile(replica).build()
                do {
                    _ = try ProfileLoader.load(json: result.text, file: profile)
                } catch {
                    written.problems.append("\(error)")
                }
                try Self.write(Array(result.text.utf8), to: profile)
                written.snapshot.profile = profile
                written.profileReport =
                    ["relayed \(session.device.label): \(replica.conversation.count) operations recorded", "profile written to \(profile)"]
                    + result.report.map { "- " + $0 }
            }
            if let capture {
                let central =
                    replica.conversation.lazy.compactMap { event -> BluetoothAddress? in
                        if case .connected(let address?) = event.kind { address } else { nil }
                    }.first ?? .zero
                let export = BTSnoopExport.write(replica, central: central, start: startedAt)
                try Self.write(export.bytes, to: capture)
                written.snapshot.capture = capture
                written.snapshot.captureRecords = export.frames
                written.captureReport = ["capture of \(export.frames) records written to \(capture)"] + export.notes.map { "- " + $0 }
            }
            return written
        }
    }

    private static func write(_ bytes: [UInt8], to path: String) throws(ControlFailure) {
        do {
            try Data(bytes).write(to: URL(filePath: path), options: .atomic)
        } catch {
            throw ControlFailure(.unavailable, "cannot write \(path): \(error)")
        }
    }
}
