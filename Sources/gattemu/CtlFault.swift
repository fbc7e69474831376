import ArgumentParser
import Control
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
        discussion: """
        Without --on, error/drop/delay apply to writes, corrupt/truncate/duplicate/reorder to notifications,
        and silence/advertise/power-cycle/disconnect happen at once.
        Examples:
          gattemu ctl fault add --char config --error not-authorized --count 1
          gattemu ctl fault add --on notify --char tx --drop --nth 2
          gattemu ctl fault add --on read --delay 100ms-300ms --probability 0.5 --seed 7
          gattemu ctl fault add --silence 10s
        """)
    @OptionGroup var options: CtlOptions

    @Option(help: "read, write, notify, indicate, connect or start.") var on: String?
    @Option(name: [.customLong("char"), .customLong("characteristic")], help: "Only this characteristic.") var characteristic: String?
    @Option(help: "Only this central (AA:BB:CC:DD:EE:FF).") var central: String?
    @Option(help: "Fire from the nth matching operation on (then once, unless --count).") var nth: Int?
    @Option(help: "Fire at most this many times.") var count: Int?
    @Option(help: "Fire with this probability (0–1).") var probability: Double?
    @Option(help: "Seed of the fault's generator (replay).") var seed: UInt64?
    @Option(help: "For --on start: wait this long first (e.g. 5s).") var after: String?
    @Option(help: "Name of the fault.") var id: String?

    @Option(help: "Delay: 200ms, 2s, or a range 100ms-300ms.") var delay: String?
    @Flag(help: "Don't answer / don't send.") var drop = false
    @Option(help: "ATT error: not-permitted, not-authorized, not-supported, invalid-offset, invalid-value-length, in-progress, failed, or 0x80–0x9F.") var error: String?
    @Option(help: "Corrupt by flipping this many random bits.") var flipBits: Int?
    @Option(help: ArgumentHelp("Corrupt by replacing bytes: OFFSET:HEX.", valueName: "offset:hex")) var replace: String?
    @Option(help: "Keep only this many bytes.") var truncate: Int?
    @Flag(help: "Send notifications twice.") var duplicate = false
    @Flag(help: "Hold a notification and send it after the next one.") var reorder = false
    @Flag(help: "Disconnect the central.") var disconnect = false
    @Option(help: "Stop advertising for this long (e.g. 10s).") var silence: String?
    @Option(help: "Switch to this advertisement variant ('base' for the base one).") var advertise: String?
    @Option(help: "Power the adapter off for this long, then on (e.g. 2s).") var powerCycle: String?

    @Option(help: "The whole spec as JSON (see docs/control.md).") var spec: String?
    @Option(help: "A JSON file with a spec, an array of specs or {\"faults\": [...]}.") var file: String?

    func buildBody() throws -> JSONAny {
        if let spec {
            do {
                return JSONAny(try JSONParser.parse(spec, file: "--spec"))
            } catch {
                throw Failure.badInput("--spec: not valid JSON (\(error))")
            }
        }
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else { throw Failure.badInput("--file \(file): cannot read it") }
            do {
                return JSONAny(try JSONParser.parse(Array(data), file: file))
            } catch {
                throw Failure.badInput("--file \(file): not valid JSON (\(error))")
            }
        }
        var body: [String: JSONAny] = [:]
        var actions: [(String, JSONAny, String)] = []  // key, value, default `on`
        if let delay {
            let parts = delay.split(separator: "-", maxSplits: 1).map(String.init)
            actions.append(("delay", parts.count == 2 ? .object(["min": .string(parts[0]), "max": .string(parts[1])]) : .string(delay), "write"))
        }
        if drop { actions.append(("drop", .bool(true), "write")) }
        if let error { actions.append(("error", .string(error), "write")) }
        if let flipBits { actions.append(("corrupt", .object(["flipBits": .int(flipBits)]), "notify")) }
        if let replace {
            let parts = replace.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let at = Int(parts[0]) else { throw Failure.badInput("--replace: expected OFFSET:HEX, e.g. 0:ff") }
            actions.append(("corrupt", .object(["at": .int(at), "hex": .string(String(parts[1]))]), "notify"))
        }
        if let truncate { actions.append(("truncate", .int(truncate), "notify")) }
        if duplicate { actions.append(("duplicate", .bool(true), "notify")) }
        if reorder { actions.append(("reorder", .bool(true), "notify")) }
        if disconnect { actions.append(("disconnect", .bool(true), "start")) }
        if let silence { actions.append(("silence", .string(silence), "start")) }
        if let advertise { actions.append(("advertise", advertise == "base" ? .null : .string(advertise), "start")) }
        if let powerCycle { actions.append(("powerCycle", .string(powerCycle), "start")) }
        guard actions.count == 1, let (key, value, defaultOn) = actions.first else {
            throw Failure.badInput(actions.isEmpty ? "give one action (--error, --drop, --delay, --flip-bits, …) or --spec" : "give only one action")
        }
        body[key] = value
        let on = self.on ?? (defaultOn == "start" && (characteristic != nil || nth != nil) ? "write" : defaultOn)
        if on != "start" || self.on != nil { body["on"] = .string(on) }
        if let characteristic { body["characteristic"] = .string(characteristic) }
        if let central { body["central"] = .string(central) }
        if let nth { body["nth"] = .int(nth) }
        if let count { body["count"] = .int(count) }
        if let probability { body["probability"] = .double(probability) }
        if let seed { body["seed"] = .raw(String(seed)) }
        if let after { body["after"] = .string(after) }
        if let id { body["id"] = .string(id) }
        return .object(body)
    }

    func run() async throws {
        let body = try buildBody()
        let answer = try await options.client().call(.POST, "/v1/faults", body: body)
        options.output(answer) {
            guard let faults = answer["faults"]?.arrayItems else { return "added " + CtlFormat.fault(answer) }
            return faults.map { "added " + CtlFormat.fault($0) }.joined(separator: "\n")
        }
    }
}

struct CtlFaultList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List injected faults with their counters.")
    @OptionGroup var options: CtlOptions

    func run() async throws {
        let answer = try await options.client().call(.GET, "/v1/faults")
        options.output(answer) {
            let faults = answer["faults"]?.arrayItems ?? []
            return faults.isEmpty ? "no faults" : faults.map(CtlFormat.fault).joined(separator: "\n")
        }
    }
}

struct CtlFaultRemove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove one fault by id.")
    @OptionGroup var options: CtlOptions
    @Argument(help: "The fault's id.") var id: String

    func run() async throws {
        let answer = try await options.client().call(.DELETE, "/v1/faults/\(CtlFormat.escape(id))")
        options.output(answer) { "removed \(id)" }
    }
}

struct CtlFaultClear: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "clear", abstract: "Remove every fault.")
    @OptionGroup var options: CtlOptions

    func run() async throws {
        let answer = try await options.client().call(.DELETE, "/v1/faults")
        options.output(answer) { "removed \(answer["removed"]?.intValue ?? 0) fault(s)" }
    }
}
