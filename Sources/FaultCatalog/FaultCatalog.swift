import Bluetooth

/// Every fault kind gattemu can inject, each declared once: the profile's fault decoder, the control API's
/// schema (the OpenAPI document, from which `profiles/schema.json`'s fault definition is made), `gattemu ctl
/// fault add` and docs/control.md's table are made from it or checked
/// against it by tests (docs/control.md, "Faults").
public enum FaultCatalog {
    /// Largest `nth` and `count`.
    public static let maximumCount = Int(Int32.max)
    /// Offsets (`corrupt`'s `at`) and lengths (`truncate`) in bytes: the ATT value limit.
    public static let byteOffsets = 0...ATTMTU.maximumValueLength
    /// Most bits `corrupt` flips.
    public static let bitFlips = 1...4096
    /// Most extra copies `duplicate` sends.
    public static let copies = 1...100
    /// Longest hex text of a byte parameter, in characters.
    public static let maximumHexCharacters = 4096
    /// Most bytes of a byte value in a fault (`rewrite`'s `match` and `replace`), and of a value a `rewrite` makes
    /// (longer results are cut to it): the ATT value limit.
    public static let maximumValueBytes = ATTMTU.maximumValueLength
    /// How long `powerCycle: true` keeps the adapter off.
    public static let defaultPowerOffMilliseconds = 1000

    /// Largest `smpError` code: an SMP error code is a byte in practice (Zephyr's groups use up to 33).
    public static let smpErrorCodes = 1...255
    /// `percent` of an upload: the share of the image a chunk reaches.
    public static let percentages = 0...100

    static let notifications: [FaultOperation] = [.notify, .indicate]
    static let answers: [FaultOperation] = [.read, .write]
    static let firmware: [FaultOperation] = [.upload, .confirm, .reset]
    static let sdus: [FaultOperation] = [.sdu, .send]

    /// The kinds, in the order listings and forms show them. Built on each use, not stored: a stored table of
    /// indirect enums is held through tagged pointers LeakSanitizer cannot follow, so every fuzz target that
    /// touched it failed with a leak report.
    public static var kinds: [FaultKind] {
        [
            FaultKind(
                name: "delay", parameter: .oneOf([.duration, .object([FaultField("min", .duration), FaultField("max", .duration)])]),
                operations: answers + notifications + firmware + [.channel] + sdus, suggestedOperation: .write,
                summary:
                    "Hold the answer or the notification that long; with min and max, a uniform jitter between them (either order)."
                    + " On upload, a slow flash: each chunk's answer (the first's, with nth 1: the erase)."
                    + " On channel, accept the request that late; on sdu, a slow reader (the SDU reaches the rules that late, the"
                    + " ones after it wait); on send, the SDU goes out that late.",
                example: #"{"on": "read", "delay": {"min": "50ms", "max": "400ms"}, "probability": 0.5, "seed": 42}"#),
            FaultKind(
                name: "drop", parameter: .flag, operations: answers + notifications + firmware + sdus, suggestedOperation: .write,
                summary:
                    "Never answer the read or write (bluetoothd answers the central with an error after 5 s), or do not send the notification;"
                    + " an SMP request (upload chunk, confirm, reset) is neither carried out nor answered: the client times out;"
                    + " an SDU received never reaches the rules, one sent is not sent.",
                example: #"{"on": "notify", "characteristic": "tx", "nth": 2, "drop": true}"#),
            FaultKind(
                name: "error", parameter: .attError, operations: answers, suggestedOperation: .write,
                summary: "Answer the read or write with this ATT error; the behaviour engine does not see the request.",
                example: #"{"on": "write", "characteristic": "config", "error": "not-authorized", "count": 1}"#),
            FaultKind(
                name: "corrupt",
                parameter: .oneOf([
                    .object([FaultField("flipBits", .integer(bitFlips))]),
                    .object([FaultField("at", .integer(byteOffsets), required: false), FaultField("hex", .hexBytes)]),
                    .object([FaultField("at", .integer(byteOffsets), required: false), FaultField("xor", .hexBytes)]),
                ]),
                operations: answers + notifications + sdus, suggestedOperation: .notify,
                summary:
                    "Flip bits at seeded random positions, replace bytes from offset at (appended past the end), or XOR them with a mask"
                    + " (of the read answer, the written value before the behaviour engine sees it, the notification, or the SDU).",
                example: #"{"on": "notify", "characteristic": "tx", "corrupt": {"flipBits": 1}, "count": 5}"#),
            FaultKind(
                name: "truncate", parameter: .integer(byteOffsets), operations: answers + notifications + sdus, suggestedOperation: .notify,
                summary:
                    "Keep only this many bytes of the read answer, the written value (before the behaviour engine), the notification or"
                    + " the SDU.",
                example: #"{"on": "notify", "truncate": 3}"#),
            FaultKind(
                name: "rewrite",
                parameter: .object([
                    FaultField("match", .value(nonEmpty: true)), FaultField("replace", .value(nonEmpty: false)),
                    FaultField("all", .boolean, required: false),
                ]),
                operations: answers + notifications + sdus, suggestedOperation: .notify,
                summary:
                    "Replace every occurrence of match by replace (only the first with \"all\": false) in the read answer, the written value"
                    + " or the notification; a result longer than \(maximumValueBytes) bytes is cut to \(maximumValueBytes) (logged).",
                example: #"{"on": "notify", "characteristic": "tx", "rewrite": {"match": {"hex": "51 60"}, "replace": {"hex": "51 61"}}}"#),
            FaultKind(
                name: "duplicate", parameter: .oneOf([.flag, .integer(copies)]), operations: notifications, suggestedOperation: .notify,
                summary: "Send the notification again: one extra copy for true, or this many.",
                example: #"{"on": "notify", "duplicate": 2}"#),
            FaultKind(
                name: "reorder", parameter: .flag, operations: notifications, suggestedOperation: .notify,
                summary: "Hold the notification back and send it right after the next one of the same characteristic.",
                example: #"{"on": "notify", "reorder": true, "nth": 4}"#),
            FaultKind(
                name: "disconnect", parameter: .flag, operations: FaultOperation.allCases, suggestedOperation: nil,
                summary: "Disconnect the operation's central right after the operation (for start: every connected central).",
                example: #"{"on": "connect", "central": "C0:FF:EE:00:00:01", "disconnect": true}"#),
            FaultKind(
                name: "silence", parameter: .duration, operations: FaultOperation.allCases, suggestedOperation: nil,
                summary: "Stop advertising for that long, then advertise again.",
                example: #"{"silence": "10s", "after": "30s"}"#),
            FaultKind(
                name: "advertise", parameter: .variant, operations: FaultOperation.allCases, suggestedOperation: nil,
                summary: "Switch to this advertisement variant, or back to the base advertisement for null.",
                example: #"{"on": "write", "nth": 3, "advertise": null}"#),
            FaultKind(
                name: "powerCycle", parameter: .oneOf([.flag, .duration]), operations: FaultOperation.allCases, suggestedOperation: nil,
                summary: "Power the adapter off for that long (1 s for true), then on, and advertise again.",
                example: #"{"powerCycle": "3s"}"#),
            FaultKind(
                name: "refuse", parameter: .oneOf([.flag, .name(LECreditBasedChannel.Refusal.allCases.map(\.rawValue))]),
                operations: [.pair, .channel], suggestedOperation: .pair,
                summary:
                    "Refuse the pairing, whatever the profile's security section says; on channel, refuse the L2CAP channel"
                    + " (true: result 0x0006, as the kernel refuses a deferred channel, or that result by name). psm-not-supported"
                    + " (0x0002), insufficient-authentication (0x0005) and insufficient-encryption (0x0008, on a link not"
                    + " encrypted) are the kernel's answer to every request while the fault is installed: no nth, count,"
                    + " central or probability.",
                example: #"{"refuse": true, "count": 1}"#),
            FaultKind(
                name: "wrongPasskey", parameter: .flag, operations: [.pair], suggestedOperation: .pair,
                summary: "Type the passkey one off, or answer a numeric comparison or just-works prompt as \"the numbers differ\".",
                example: #"{"on": "pair", "wrongPasskey": true}"#),
            FaultKind(
                name: "forgetBonds", parameter: .flag, operations: [.start], suggestedOperation: nil,
                summary: "Make bluetoothd forget every paired central's keys without telling them, as a factory reset does.",
                example: #"{"forgetBonds": true, "after": "2s"}"#),
            FaultKind(
                name: "smpError", parameter: .integer(smpErrorCodes), operations: firmware, suggestedOperation: .upload,
                summary:
                    "Refuse the SMP request with this error code of its group (the image group's for upload and confirm, the OS"
                    + " group's for reset): SMP v2 clients get err {group, rc}, v1 clients the code Zephyr translates it to.",
                example: #"{"on": "upload", "percent": 60, "smpError": 12}"#),
            FaultKind(
                name: "wrongHash", parameter: .flag, operations: [.upload], suggestedOperation: .upload,
                summary:
                    "The image of the upload under way is kept with a wrong hash: the last chunk's answer says match false, state"
                    + " read shows that hash, and marking the image by its own hash is answered hash-not-found (8).",
                example: #"{"on": "upload", "wrongHash": true, "count": 1}"#),
            FaultKind(
                name: "losePending", parameter: .flag, operations: [.reset], suggestedOperation: .reset,
                summary: "At this reset the image waiting in slot 1 is lost: MCUboot finds nothing to swap in and boots the running image.",
                example: #"{"on": "reset", "losePending": true, "count": 1}"#),
            FaultKind(
                name: "closeChannel", parameter: .flag, operations: sdus, suggestedOperation: .send,
                summary:
                    "Close the L2CAP channel right after the SDU (an L2CAP disconnection; the link stays up): a transfer cut mid-way.",
                example: #"{"on": "send", "channel": "data", "nth": 100, "closeChannel": true}"#),
        ]
    }

    /// The kind with this action key.
    public static func kind(named name: String) -> FaultKind? { kinds.first { $0.name == name } }

    /// The action keys, in catalog order.
    public static var names: [String] { kinds.map(\.name) }
}
