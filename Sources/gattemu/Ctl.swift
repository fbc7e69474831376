import ArgumentParser
import Control
import ControlContract
import Emulator
import FoundationEssentials
import Profile

#if canImport(Glibc)
    import Glibc
#endif

/// `gattemu ctl …`: a client of a running `gattemu run`'s control API.
struct Ctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ctl", abstract: "Control a running emulator through its control API.",
        discussion: "Exit codes: 0 ok, 1 server unreachable or request refused (its message on one line), 2 bad command line.",
        subcommands: [
            CtlDevices.self, CtlStatus.self, CtlEvents.self, CtlTrigger.self, CtlNotify.self, CtlIndicate.self, CtlSetValue.self,
            CtlSetVariable.self, CtlFault.self, CtlDisconnect.self, CtlAdvertise.self, CtlReset.self,
            CtlPairing.self, CtlBonds.self, CtlService.self, CtlAddress.self, CtlSnapshot.self, CtlFirmware.self,
        ])
}

/// `--control URL` and `--token`, shared by every `ctl` command.
struct CtlOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The control API (default: $GATTEMU_CONTROL or http://127.0.0.1:8765).", valueName: "url"))
    var control: String?

    @Option(
        help: ArgumentHelp(
            "Bearer token (default: $GATTEMU_CONTROL_TOKEN, then $GATTEMU_TOKEN, then the file `gattemu run` made for a gattemu of yours on this machine). Visible to other users: prefer --token-file or the environment.",
            valueName: "token"))
    var token: String?

    @Option(help: ArgumentHelp("Read the bearer token from the first line of this file (mode 600 or 400).", valueName: "file"))
    var tokenFile: String?

    @Flag(help: "Print the server's JSON instead of text.")
    var json = false

    @Option(help: ArgumentHelp("The device of a rig to drive (an id from `gattemu ctl devices`).", valueName: "id"))
    var device: String?

    func client() throws -> CtlClient {
        let environment = ProcessInfo.processInfo.environment
        let url = try ControlURL(control ?? environment["GATTEMU_CONTROL"] ?? "http://127.0.0.1:8765")
        if let device, device.isEmpty { throw Failure.badInput("--device must not be empty") }
        return CtlClient(endpoint: url, token: try resolvedToken(environment) ?? foundToken(for: url, environment), device: device)
    }

    /// The token `gattemu run` made for a gattemu of this user on this machine, from its file
    /// (``ControlTokenFile``); nil for another host or when there is none.
    func foundToken(for url: ControlURL, _ environment: [String: String]) throws -> String? {
        guard ControlEndpoint(host: url.host, port: url.port).isLoopback else { return nil }
        do {
            return try ControlTokenFile.find(port: url.port, environment: environment)
        } catch {
            throw Failure.runtime(error.message)
        }
    }

    /// `--token`, `--token-file` (not both), `$GATTEMU_CONTROL_TOKEN`, `$GATTEMU_TOKEN`: the first given.
    func resolvedToken(_ environment: [String: String]) throws -> String? {
        if token != nil, tokenFile != nil { throw Failure.badInput("give --token or --token-file, not both") }
        if let token { return token }
        if let tokenFile {
            do {
                return try ControlToken.read(file: tokenFile, option: "--token-file")
            } catch {
                throw Failure.badInput(error.message)
            }
        }
        let fromEnvironment = [ControlToken.environmentVariable, "GATTEMU_TOKEN"].lazy.compactMap { environment[$0] }.first { !$0.isEmpty }
        return fromEnvironment
    }

    /// Prints the server's JSON as it came (one line, keys sorted; with `--json`), or `text`; either escaped for
    /// the terminal (``CtlFormat/json(_:)``, ``CtlFormat/text(_:)``).
    func output(_ json: String, text: () -> String) {
        if self.json {
            print(CtlFormat.json(json))
        } else {
            let text = text()
            if !text.isEmpty { print(CtlFormat.text(text)) }
        }
    }
}

struct CtlDevices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices", abstract: "The devices this gattemu runs (a rig's), their adapters and states.")
    @OptionGroup var options: CtlOptions

    func run() async throws {
        let (list, json) = try await options.client().call(.GET, "/v1/devices", as: DeviceList.self)
        options.output(json) { CtlFormat.devices(list) }
    }
}

struct CtlStatus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Adapter, advertising, centrals, state and faults.")
    @OptionGroup var options: CtlOptions

    func run() async throws {
        let (status, json) = try await options.client().call(.GET, "/v1/status", as: Status.self)
        options.output(json) { CtlFormat.status(status) }
    }
}

struct CtlFirmware: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "firmware", abstract: "The firmware target's image slots, the upload under way and whether it reboots.",
        discussion: "For a profile with a `firmware` section (docs/firmware.md); otherwise the server answers 404.")
    @OptionGroup var options: CtlOptions

    func run() async throws {
        let (firmware, json) = try await options.client().call(.GET, "/v1/firmware", as: FirmwareStatus.self)
        options.output(json) { CtlFormat.firmware(firmware) }
    }
}

struct CtlEvents: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "events", abstract: "Print logged events; --follow to stream new ones.")
    @OptionGroup var options: CtlOptions
    @Option(help: "Only events after this sequence number.") var since: Int?
    @Flag(name: .shortAndLong, help: "Keep printing new events (Server-Sent Events) until interrupted.") var follow = false

    func run() async throws {
        let client = try options.client()
        let json = options.json
        if follow {
            try await client.follow(since: since ?? 0) { line in
                let event = try? JSONDecoder().decode(Event.self, from: Data(line.utf8))
                var bytes = Array(((json ? CtlFormat.json(line) : event.map(CtlFormat.event) ?? CtlFormat.text(line)) + "\n").utf8)
                DescriptorOutput.writeAll(&bytes, to: STDOUT_FILENO)
            }
            return
        }
        let (page, _) = try await client.call(.GET, "/v1/events?since=\(since ?? 0)&limit=10000", as: EventPage.self)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for event in page.events {
            print(json ? CtlFormat.json(String(decoding: (try? encoder.encode(event)) ?? Data(), as: UTF8.self)) : CtlFormat.event(event))
        }
    }
}

struct CtlTrigger: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "trigger", abstract: "Fire a named trigger of the profile.")
    @OptionGroup var options: CtlOptions
    @Argument(help: "The trigger's name.") var name: String
    @Option(name: .customLong("arg"), help: ArgumentHelp("A trigger argument.", valueName: "name=value")) var arguments: [String] = []

    func run() async throws {
        var body: [String: ArgumentValue] = [:]
        for argument in arguments {
            guard let equals = argument.firstIndex(of: "="), equals != argument.startIndex else {
                throw Failure.badInput("--arg \(argument): expected name=value")
            }
            body[String(argument[..<equals])] = .string(String(argument[argument.index(after: equals)...]))
        }
        let (_, json) = try await options.client().call(
            .POST, "/v1/triggers/\(CtlFormat.escape(name))", body: TriggerBody(arguments: body), as: TriggerResult.self)
        options.output(json) { "fired \(name)" }
    }
}

/// `--hex`, `--utf8` or `--base64`: exactly one.
struct ValueOptions: ParsableArguments {
    @Option(help: "The value as hex bytes.") var hex: String?
    @Option(help: "The value as UTF-8 text.") var utf8: String?
    @Option(help: "The value as base64.") var base64: String?

    func validate() throws {
        if [hex, utf8, base64].compactMap({ $0 }).count != 1 { throw ValidationError("give exactly one of --hex, --utf8, --base64") }
    }

    var body: ValueBody {
        if let hex { return .hex(hex) }
        if let utf8 { return .utf8(utf8) }
        return .base64(base64 ?? "")
    }
}

struct CtlNotify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notify", abstract: "Notify subscribers of a characteristic (faults apply).")
    @OptionGroup var options: CtlOptions
    @Argument(help: "Characteristic id.") var characteristic: String
    @OptionGroup var value: ValueOptions

    func run() async throws {
        let (_, json) = try await options.client().call(
            .POST, "/v1/characteristics/\(CtlFormat.escape(characteristic))/notify", body: value.body, as: ValueResult.self)
        options.output(json) { "notified \(characteristic)" }
    }
}

struct CtlIndicate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "indicate", abstract: "Indicate a value to subscribers of a characteristic.")
    @OptionGroup var options: CtlOptions
    @Argument(help: "Characteristic id.") var characteristic: String
    @OptionGroup var value: ValueOptions

    func run() async throws {
        let (_, json) = try await options.client().call(
            .POST, "/v1/characteristics/\(CtlFormat.escape(characteristic))/indicate", body: value.body, as: ValueResult.self)
        options.output(json) { "indicated \(characteristic)" }
    }
}

struct CtlSetValue: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-value", abstract: "Replace a characteristic's stored value (no notification).")
    @OptionGroup var options: CtlOptions
    @Argument(help: "Characteristic id.") var characteristic: String
    @OptionGroup var value: ValueOptions

    func run() async throws {
        let (_, json) = try await options.client().call(
            .PUT, "/v1/characteristics/\(CtlFormat.escape(characteristic))/value", body: value.body, as: ValueResult.self)
        options.output(json) { "set \(characteristic)" }
    }
}

struct CtlDisconnect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "disconnect", abstract: "Disconnect a connected central.")
    @OptionGroup var options: CtlOptions
    @Argument(help: "The central's address, AA:BB:CC:DD:EE:FF.") var address: String

    func run() async throws {
        let (_, json) = try await options.client().call(
            .POST, "/v1/centrals/\(CtlFormat.escape(address))/disconnect", as: DisconnectResult.self)
        options.output(json) { "disconnected \(address)" }
    }
}

struct CtlAdvertise: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "advertise", abstract: "Switch the advertisement variant (--base for the base one).")
    @OptionGroup var options: CtlOptions
    @Argument(help: "The variant's name.") var variant: String?
    @Flag(help: "Back to the base advertisement.") var base = false

    func validate() throws {
        if (variant == nil) == !base { throw ValidationError("give a variant name or --base") }
    }

    func run() async throws {
        let (_, json) = try await options.client().call(
            .PUT, "/v1/advertisement", body: VariantBody(variant: variant), as: AdvertisementResult.self)
        options.output(json) { "advertising \(variant ?? "(base)")" }
    }
}

struct CtlReset: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset", abstract: "Put the behaviour back to the profile's initial state.")
    @OptionGroup var options: CtlOptions

    func run() async throws {
        let (_, json) = try await options.client().call(.POST, "/v1/reset", as: OkResult.self)
        options.output(json) { "reset" }
    }
}

struct CtlSnapshot: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshot", abstract: "Have `gattemu relay` write the session so far (its -o profile and --capture file).",
        discussion: "Refused (exit 1) by a gattemu that is not a relay, or a relay started without -o and --capture.")
    @OptionGroup var options: CtlOptions

    func run() async throws {
        let (result, json) = try await options.client().call(.POST, "/v1/relay/snapshot", as: RelaySnapshotResult.self)
        options.output(json) {
            var lines = ["\(result.operations) operations recorded" + (result.notRecorded > 0 ? ", \(result.notRecorded) not kept" : "")]
            if let profile = result.profile { lines.append("profile written to \(profile)") }
            if let capture = result.capture { lines.append("capture of \(result.captureRecords ?? 0) records written to \(capture)") }
            return lines.joined(separator: "\n")
        }
    }
}

struct CtlSetVariable: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-variable", abstract: "Set a variable or state value of the profile (e.g. lockState 0).",
        discussion: "The value is taken as the value's type in the profile: a whole number, true/false, text, or hex for bytes.")
    @OptionGroup var options: CtlOptions
    @Argument(help: "The variable's or state value's name.") var name: String
    @Argument(help: "The new value.") var value: String
    @Flag(help: "Send the value as text even when it looks like a number or boolean.") var text = false
    @Flag(help: "The value is hex bytes.") var hex = false

    func run() async throws {
        let body: NamedValueBody =
            if hex { .hex(value) } else if text { .string(value) } else if let number = Int(value) {
                .integer(number)
            } else if value == "true" || value == "false" { .bool(value == "true") } else { .string(value) }
        let (answer, json) = try await options.client().call(
            .PUT, "/v1/variables/\(CtlFormat.escape(name))", body: VariableBody(value: body), as: VariableResult.self)
        options.output(json) { "\(name) = \(answer.value)" }
    }
}
