import ArgumentParser
import Bluetooth
import Control
import ControlContract
import FaultCatalog
import FoundationEssentials
import Profile

struct CtlFault: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fault", abstract: "Add, list, remove and clear injected faults.",
        subcommands: [CtlFaultAdd.self, CtlFaultList.self, CtlFaultRemove.self, CtlFaultClear.self])
}

struct CtlFaultAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Inject a fault (one action option, or --spec JSON / --file).",
        discussion: discussion)

    /// The kinds of ``FaultCatalog``, each with its operations and the one chosen without --on, then examples.
    static var discussion: String {
        let kinds = FaultCatalog.kinds.map { kind in
            let byWrite = kind.operations.contains(.write) ? " (write with --char or --nth)" : ""
            let on = kind.suggestedOperation?.rawValue ?? kind.implicitOperation.map { $0.rawValue + byWrite } ?? "required"
            return
                "  \(kind.name): \(kind.summary)\n      on \(kind.operations.map(\.rawValue).joined(separator: ", ")); without --on: \(on)"
        }
        return """
            Fault kinds (docs/control.md, "Faults"):
            \(kinds.joined(separator: "\n"))
            Examples:
              gattemu ctl fault add --char config --error not-authorized --count 1
              gattemu ctl fault add --on notify --char tx --drop --nth 2
              gattemu ctl fault add --on write --char rx --rewrite 5160=5161
              gattemu ctl fault add --on read --delay 100ms-300ms --probability 0.5 --seed 7
              gattemu ctl fault add --silence 10s
              gattemu ctl fault add --on upload --percent 60 --smp-error 12
              gattemu ctl fault add --on send --channel data --nth 100 --close-channel
              gattemu ctl fault add --spec '{"on": "notify", "corrupt": {"at": 1, "xor": "80"}}'
            """
    }

    /// The option's help: the kind's summary from ``FaultCatalog`` and how the option writes its value.
    static func help(_ name: String, _ form: String = "", valueName: String? = nil) -> ArgumentHelp {
        ArgumentHelp((FaultCatalog.kind(named: name)?.summary ?? name) + (form.isEmpty ? "" : " " + form), valueName: valueName)
    }

    @OptionGroup var options: CtlOptions

    @Option(help: ArgumentHelp(FaultOperation.allCases.map(\.rawValue).joined(separator: ", ") + ".")) var on: String?
    @Option(name: [.customLong("char"), .customLong("characteristic")], help: "Only this characteristic.") var characteristic: String?
    @Option(help: "Only this central (AA:BB:CC:DD:EE:FF).") var central: String?
    @Option(help: "Fire from the nth matching operation on (then once, unless --count).") var nth: Int?
    @Option(help: "Fire at most this many times.") var count: Int?
    @Option(help: "Fire with this probability (0–1).") var probability: Double?
    @Option(help: "Seed of the fault's generator (replay).") var seed: UInt64?
    @Option(help: "For --on start: wait this long first (e.g. 5s).") var after: String?
    @Option(help: "For --on upload: only chunks that bring the upload to this share of the image (0–100).") var percent: Int?
    @Option(help: "For --on channel, sdu or send: only this L2CAP channel.") var channel: String?
    @Option(help: "Name of the fault.") var id: String?

    @Option(help: CtlFaultAdd.help("delay", "E.g. 200ms, 2s, or a range 100ms-300ms.")) var delay: String?
    @Flag(help: CtlFaultAdd.help("drop")) var drop = false
    @Option(help: CtlFaultAdd.help("error", "E.g. not-authorized, or 0x80–0x9F.")) var error: String?
    @Option(help: CtlFaultAdd.help("corrupt", "This many bits.")) var flipBits: Int?
    @Option(help: CtlFaultAdd.help("corrupt", "OFFSET:HEX replaces bytes.", valueName: "offset:hex")) var replace: String?
    @Option(help: CtlFaultAdd.help("truncate")) var truncate: Int?
    @Option(
        help: CtlFaultAdd.help(
            "rewrite", "MATCH=REPLACE in hex (REPLACE may be empty); --spec for utf8, base64 or \"all\": false.",
            valueName: "match=replace")) var rewrite: String?
    @Flag(help: CtlFaultAdd.help("duplicate", "(One copy.)")) var duplicate = false
    @Flag(help: CtlFaultAdd.help("reorder")) var reorder = false
    @Flag(help: CtlFaultAdd.help("disconnect")) var disconnect = false
    @Option(help: CtlFaultAdd.help("silence", "E.g. 10s.")) var silence: String?
    @Option(help: CtlFaultAdd.help("advertise", "('base' for the base one.)")) var advertise: String?
    @Option(help: CtlFaultAdd.help("powerCycle", "E.g. 2s.")) var powerCycle: String?
    @Flag(help: CtlFaultAdd.help("refuse")) var refusePairing = false
    @Option(
        help: ArgumentHelp(
            "Refuse the L2CAP channel (--on channel, the default with this option) with this result: "
                + LECreditBasedChannel.Refusal.allCases.map(\.rawValue).joined(separator: ", ") + " (docs/channels.md).",
            valueName: "result"))
    var refuseChannel: String?
    @Flag(help: CtlFaultAdd.help("wrongPasskey")) var wrongPasskey = false
    @Flag(help: CtlFaultAdd.help("forgetBonds")) var forgetBonds = false
    @Option(help: CtlFaultAdd.help("smpError", "E.g. 12 (flash write failed).")) var smpError: Int?
    @Flag(help: CtlFaultAdd.help("wrongHash")) var wrongHash = false
    @Flag(help: CtlFaultAdd.help("losePending")) var losePending = false
    @Flag(help: CtlFaultAdd.help("closeChannel")) var closeChannel = false

    @Option(help: "The whole spec as JSON (see docs/control.md).") var spec: String?
    @Option(help: "A JSON file with a spec, an array of specs or {\"faults\": [...]}.") var file: String?

    /// The request: `--spec` or `--file` sent as given (the server checks it), or a ``FaultRequest`` built
    /// from the options.
    func buildBody() throws -> (request: FaultRequest?, raw: [UInt8]?) {
        if let spec {
            guard (try? JSONParser.parse(spec, file: "--spec")) != nil else { throw Failure.badInput("--spec: not valid JSON") }
            return (nil, Array(spec.utf8))
        }
        if let file {
            return (nil, try readJSONFile(file, what: "fault (--file)").bytes)
        }
        func duration(_ text: String) -> DurationValue { Int(text).map { .milliseconds($0) } ?? .text(text) }
        var actions: [FaultActionBody] = []
        if let delay {
            let parts = delay.split(separator: "-", maxSplits: 1).map(String.init)
            actions.append(.delay(parts.count == 2 ? .range(min: duration(parts[0]), max: duration(parts[1])) : .fixed(duration(delay))))
        }
        if drop { actions.append(.drop) }
        if let error { actions.append(.error(.name(error))) }
        if let flipBits { actions.append(.corrupt(.flipBits(flipBits))) }
        if let replace {
            let parts = replace.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let at = Int(parts[0]) else { throw Failure.badInput("--replace: expected OFFSET:HEX, e.g. 0:ff") }
            actions.append(.corrupt(.replace(at: at, hex: String(parts[1]))))
        }
        if let truncate { actions.append(.truncate(truncate)) }
        if let rewrite {
            let parts = rewrite.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty else {
                throw Failure.badInput("--rewrite: expected MATCH=REPLACE in hex, e.g. 5160=5161")
            }
            actions.append(.rewrite(RewriteValue(match: .hex(String(parts[0])), replace: .hex(String(parts[1])))))
        }
        if duplicate { actions.append(.duplicate(nil)) }
        if reorder { actions.append(.reorder) }
        if disconnect { actions.append(.disconnect) }
        if let silence { actions.append(.silence(duration(silence))) }
        if let advertise { actions.append(.advertise(advertise == "base" ? nil : advertise)) }
        if let powerCycle { actions.append(.powerCycle(duration(powerCycle))) }
        if refusePairing { actions.append(.refuse(nil)) }
        if let refuseChannel { actions.append(.refuse(refuseChannel)) }
        if wrongPasskey { actions.append(.wrongPasskey) }
        if forgetBonds { actions.append(.forgetBonds) }
        if let smpError { actions.append(.smpError(smpError)) }
        if wrongHash { actions.append(.wrongHash) }
        if losePending { actions.append(.losePending) }
        if closeChannel { actions.append(.closeChannel) }
        guard actions.count == 1, let action = actions.first else {
            throw Failure.badInput(
                actions.isEmpty ? "give one action (--error, --drop, --delay, --flip-bits, …) or --spec" : "give only one action")
        }
        let trigger: FaultTrigger?
        if let on {
            guard let given = FaultTrigger(rawValue: on) else {
                throw Failure.badInput("--on \(on): expected one of " + FaultTrigger.allCases.map(\.rawValue).joined(separator: ", "))
            }
            trigger = given
        } else if refuseChannel != nil {
            trigger = .channel
        } else {
            trigger = FaultRequest.defaultTrigger(for: action, characteristic: characteristic != nil, nth: nth != nil)
        }
        var request = FaultRequest(on: trigger, action: action)
        request.characteristic = characteristic
        request.central = central
        request.nth = nth
        request.count = count
        request.probability = probability
        request.seed = seed
        request.after = after.map(duration)
        request.percent = percent
        request.channel = channel
        request.id = id
        return (request, nil)
    }

    func run() async throws {
        let (request, raw) = try buildBody()
        let (added, json) = try await options.client().call(.POST, "/v1/faults", body: request, raw: raw, as: FaultsAdded.self)
        options.output(json) { added.faults.map { "added " + CtlFormat.fault($0) }.joined(separator: "\n") }
    }
}

struct CtlFaultList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List injected faults with their counters.")
    @OptionGroup var options: CtlOptions

    func run() async throws {
        let (list, json) = try await options.client().call(.GET, "/v1/faults", as: FaultList.self)
        options.output(json) { list.faults.isEmpty ? "no faults" : list.faults.map(CtlFormat.fault).joined(separator: "\n") }
    }
}

struct CtlFaultRemove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove one fault by id.")
    @OptionGroup var options: CtlOptions
    @Argument(help: "The fault's id.") var id: String

    func run() async throws {
        let (_, json) = try await options.client().call(.DELETE, "/v1/faults/\(CtlFormat.escape(id))", as: FaultRemoved.self)
        options.output(json) { "removed \(id)" }
    }
}

struct CtlFaultClear: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "clear", abstract: "Remove every fault.")
    @OptionGroup var options: CtlOptions

    func run() async throws {
        let (cleared, json) = try await options.client().call(.DELETE, "/v1/faults", as: FaultsCleared.self)
        options.output(json) { "removed \(cleared.removed) fault(s)" }
    }
}
