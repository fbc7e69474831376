import Bluetooth
import JSON

extension Builder {
    /// The most SDUs one rule sends back; a longer answer (a transfer) is cut there, and the report says so.
    static let maximumSDUsPerRule = 64

    /// A `channels` entry per recorded PSM (fixed, as recorded) and its rules: what the device sent as soon as the
    /// channel opened (an `open` rule), and for each SDU of the central, the device's SDUs until the next one (an
    /// `sdu` rule matching those bytes; the first recording of the same bytes wins). SDUs over the profile's value
    /// limit are left out, with a line in the report.
    mutating func buildChannels() -> [JSONNode] {
        var entries: [JSONNode] = []
        for recording in replica.channels {
            guard LECreditBasedChannel.psms.contains(recording.psm), recording.psm != LECreditBasedChannel.eattPSM else {
                report.append(
                    "L2CAP: a channel on PSM \(LECreditBasedChannel.text(recording.psm)) left out: not a PSM a profile can listen on")
                continue
            }
            let id = ids.unique("psm" + Hex.word(recording.psm).lowercased())
            let mtu = min(LECreditBasedChannel.mtus.upperBound, max(2048, recording.largestFromCentral))
            let count = recording.sessions.joined().count
            entries.append(
                .object([
                    ("id", .string(id)), ("psm", .string(LECreditBasedChannel.text(recording.psm))), ("mtu", .int(mtu)),
                    (
                        "description",
                        .string(
                            "L2CAP channel recorded on PSM \(LECreditBasedChannel.text(recording.psm)): \(count) SDUs over \(recording.sessions.count) connection"
                                + (recording.sessions.count == 1 ? "" : "s"))
                    ),
                ]))
            var answered: Set<[UInt8]> = []
            var greeted = false
            var tooLarge = 0
            var cut = 0
            for session in recording.sessions {
                var index = 0
                // What the device sent before the central's first SDU: its greeting.
                var greeting: [DeviceReplica.ChannelRecording.SDU] = []
                while index < session.count, !session[index].fromCentral {
                    greeting.append(session[index])
                    index += 1
                }
                if !greeting.isEmpty, !greeted {
                    greeted = true
                    let (actions, dropped, cutHere) = sendActions(id, greeting)
                    tooLarge += dropped
                    cut += cutHere
                    if !actions.isEmpty {
                        addRule(
                            id: "\(id)-open", on: .object([("open", .string(id))]), when: nil, actions: actions,
                            description: "the device's first SDUs on the channel" + Self.frames(greeting))
                    }
                }
                while index < session.count {
                    let request = session[index]
                    index += 1
                    var answers: [DeviceReplica.ChannelRecording.SDU] = []
                    while index < session.count, !session[index].fromCentral {
                        answers.append(session[index])
                        index += 1
                    }
                    guard request.value.count <= options.maximumSDUBytes else {
                        tooLarge += 1
                        continue
                    }
                    guard !answers.isEmpty, answered.insert(request.value).inserted else { continue }
                    let (actions, dropped, cutHere) = sendActions(id, answers)
                    tooLarge += dropped
                    cut += cutHere
                    guard !actions.isEmpty else { continue }
                    addRule(
                        id: "\(id)-sdu",
                        on: .object([("sdu", .string(id)), ("equals", .hex(request.value))]),
                        when: nil, actions: actions,
                        description: "SDU of the central" + Self.frames([request]) + " → \(answers.count) SDUs" + Self.frames(answers))
                }
            }
            report.append(
                "L2CAP: channel \"\(id)\" (PSM \(LECreditBasedChannel.text(recording.psm))): \(count) SDUs replayed by rules matching the central's bytes"
            )
            if tooLarge > 0 {
                report.append(
                    "L2CAP: \(tooLarge) SDUs of channel \"\(id)\" left out: over \(options.maximumSDUBytes) bytes, a profile value's most")
            }
            if cut > 0 {
                report.append(
                    "L2CAP: answers of channel \"\(id)\" longer than \(Self.maximumSDUsPerRule) SDUs (a transfer) replay their first \(Self.maximumSDUsPerRule) (\(cut) left out)"
                )
            }
        }
        return entries
    }

    /// `send` actions for `sdus`, at most ``maximumSDUsPerRule``, none over a profile value's limit; how many were too
    /// large and how many were cut.
    private func sendActions(_ id: String, _ sdus: [DeviceReplica.ChannelRecording.SDU]) -> ([JSONNode], Int, Int) {
        let fitting = sdus.filter { $0.value.count <= options.maximumSDUBytes }
        let kept = fitting.prefix(Self.maximumSDUsPerRule)
        let actions = kept.map { sdu in
            JSONNode.object([("send", .string(id)), ("value", .hex(sdu.value))])
        }
        return (actions, sdus.count - fitting.count, fitting.count - kept.count)
    }

    static func frames(_ sdus: [DeviceReplica.ChannelRecording.SDU]) -> String {
        let frames = sdus.compactMap(\.frame)
        guard let first = frames.first, let last = frames.last else { return "" }
        return first == last ? " (frame \(first))" : " (frames \(first)–\(last))"
    }
}
