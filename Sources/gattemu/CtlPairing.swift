import ArgumentParser
import ControlContract

/// `gattemu ctl pairing`: shows the pairing prompt, or answers it.
struct CtlPairing: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pairing", abstract: "Show how the device pairs and the prompt waiting, or answer it.",
        discussion:
            "Without an answer: the prompt (if any, with its id) and the passkey gattemu displayed. With --passkey: the passkey the central shows (passkey entry) or the number it shows (numeric comparison); --accept / --refuse for just works and numeric comparison. The answer names the prompt: --prompt ID (from the listing), else the one waiting when ctl asks; an answer for a prompt no longer waiting is refused."
    )
    @OptionGroup var options: CtlOptions
    @Option(help: ArgumentHelp("Type this passkey (six digits).", valueName: "digits")) var passkey: String?
    @Flag(help: "Accept the pairing.") var accept = false
    @Flag(help: "Refuse the pairing.") var refuse = false
    @Option(help: ArgumentHelp("Answer this prompt only (its id, as listed); default: the one waiting now.", valueName: "id")) var prompt:
        Int?

    func validate() throws {
        if [passkey != nil, accept, refuse].filter({ $0 }).count > 1 { throw ValidationError("give one of --passkey, --accept, --refuse") }
        if let prompt, prompt < 1 { throw ValidationError("--prompt: a prompt's id, from 1") }
        if prompt != nil, passkey == nil, !accept, !refuse { throw ValidationError("--prompt goes with --passkey, --accept or --refuse") }
        if let passkey, passkey.utf8.count != 6 || !passkey.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            throw ValidationError("--passkey: six digits, e.g. 012345")
        }
    }

    func run() async throws {
        let client = try options.client()
        guard passkey != nil || accept || refuse else {
            let (status, json) = try await client.call(.GET, "/v1/pairing", as: PairingStatus.self)
            options.output(json) { Self.describe(status) }
            return
        }
        var id = prompt
        if id == nil {
            let (status, _) = try await client.call(.GET, "/v1/pairing", as: PairingStatus.self)
            guard let waiting = status.prompt else { throw Failure.runtime("no pairing prompt is waiting") }
            id = waiting.id
        }
        let body = PairingAnswerBody(prompt: id ?? 0, passkey: passkey, accept: passkey == nil ? accept : nil)
        let (answered, json) = try await client.call(.POST, "/v1/pairing", body: body, as: PairingAnswered.self)
        options.output(json) { "answered the \(answered.kind.rawValue) prompt of \(answered.central)" }
    }

    static func describe(_ status: PairingStatus) -> String {
        guard status.agent, let io = status.io else { return "no pairing agent (the profile does not pair)" }
        var lines = ["agent: \(io), pairing \(status.pairing ?? "?"), confirm \(status.confirm ?? "?")"]
        if let prompt = status.prompt {
            lines.append(
                "waiting: prompt \(prompt.id), \(prompt.kind.rawValue) from \(prompt.central)"
                    + (prompt.passkey.map { ", the number \($0)" } ?? ""))
        } else {
            lines.append("no prompt waiting")
        }
        if let displayed = status.displayed { lines.append("displayed: passkey \(displayed.passkey) for \(displayed.central)") }
        return lines.joined(separator: "\n")
    }
}

/// `gattemu ctl bonds`: lists the paired centrals, or forgets one.
struct CtlBonds: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bonds", abstract: "List the centrals paired with the adapter, or forget one (--forget).",
        discussion:
            "--forget deletes bluetoothd's keys for the central without telling it, as a factory reset does: its next encrypted reconnect fails until it pairs again."
    )
    @OptionGroup var options: CtlOptions
    @Option(help: ArgumentHelp("Forget this central's keys.", valueName: "address")) var forget: String?

    func run() async throws {
        let client = try options.client()
        if let forget {
            let (_, json) = try await client.call(.DELETE, "/v1/bonds/\(CtlFormat.escape(forget))", as: BondForgotten.self)
            options.output(json) { "forgot \(forget)" }
            return
        }
        let (list, json) = try await client.call(.GET, "/v1/bonds", as: BondList.self)
        options.output(json) {
            list.bonds.isEmpty
                ? "no paired centrals"
                : list.bonds.map {
                    "\($0.central) (\($0.addressType))" + ($0.bonded ? " bonded" : " paired, not bonded")
                        + ($0.connected ? ", connected" : "")
                }.joined(separator: "\n")
        }
    }
}
