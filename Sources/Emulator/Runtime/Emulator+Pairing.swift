import BlueZ
import Bluetooth
import Profile

/// The pairing agent's side of the emulator: what bluetoothd asks while a central pairs, answered from the
/// profile's `security` section or by the control API, and every question and answer logged.
struct PairingState {
    var agent: PairingAgent?
    /// The question waiting for `POST /v1/pairing`; bluetoothd asks one at a time.
    var prompt: PendingPairingPrompt?
    /// The passkey shown last (`DisplayPasskey`).
    var displayed: PairingSnapshot.Displayed?
    var nextPrompt: UInt64 = 0
    /// Whether the controller had Secure Connections on before gattemu set the profile's mode; nil: not changed.
    var secureConnectionsBefore: Bool?
}

struct PendingPairingPrompt {
    let id: UInt64
    let request: PairingRequest
    /// What the prompt asks; only just works, numeric comparison and passkey entry wait for the control API.
    let kind: PairingSnapshot.PromptKind
    /// The relay's pairing with the real device, not a central's with gattemu.
    let device: Bool
    let reply: CheckedContinuation<PairingAnswer, Never>

    var snapshot: PairingSnapshot.Prompt {
        var passkey: UInt32?
        if case .confirmation(_, let shown) = request { passkey = shown }
        return PairingSnapshot.Prompt(id: id, central: request.central, kind: kind, passkey: passkey, device: device)
    }
}

extension Emulator: PairingHandler {
    /// The agent's settings: the profile's, unless the responder has its own (a relay's agent answers both legs).
    var agentSecurity: SecurityDefinition? { pipeline.responder.agentSecurity(profile: profile.pairingSecurity) }

    /// Registers the pairing agent when the profile needs one, or gattemu relays (bluetoothd's default agent).
    func registerAgent(stack: BlueZStack) async throws(BlueZError) {
        guard let security = agentSecurity, pairing.agent == nil else { return }
        pairing.agent = try await PairingAgent.register(capability: security.io, handler: self, stack: stack)
        log.record(
            .note,
            detail: "pairing agent registered as bluetoothd's default: \(security.io), pairing \(security.pairing.rawValue)"
                + (security.passkey == nil ? "" : ", the profile's passkey") + ", confirm \(security.confirm.rawValue)")
    }

    /// Sets the controller's LE Secure Connections mode when the profile asks for `off` (through the kernel: needs
    /// root); `on` is the kernel's and bluetoothd's default and is left as it is.
    func applySecureConnections(on adapter: Adapter) async throws(BlueZError) {
        guard let security = profile.pairingSecurity, security.secureConnections != .on else { return }
        let mode = security.secureConnections
        let what = "\(security.path).secureConnections \"\(mode.rawValue)\" on \(adapter.name)"
        do throws(ManagementError) {
            let controller = try ControllerManagement.named(adapter.name)
            let information = try await controller.information()
            guard information.supportsSecureConnections else {
                throw .unavailable("the controller does not support LE Secure Connections")
            }
            if pairing.secureConnectionsBefore == nil { pairing.secureConnectionsBefore = information.secureConnections }
            try await controller.setSecureConnections(mode)
        } catch {
            throw .controller(what, error)
        }
        log.record(
            .note,
            detail: "LE Secure Connections \(mode.rawValue) on \(adapter.name)"
                + (mode == .off ? ": centrals pair the legacy way" : ""))
    }

    /// At stop: the controller's Secure Connections setting as it was (on or off; the kernel does not report "only").
    func restoreSecureConnections() async {
        guard let before = pairing.secureConnectionsBefore, let adapter, let controller = ControllerManagement(adapterName: adapter.name)
        else { return }
        pairing.secureConnectionsBefore = nil
        do throws(ManagementError) {
            try await controller.setSecureConnections(before ? .on : .off)
            log.record(.note, detail: "LE Secure Connections \(before ? "on" : "off") on \(adapter.name) again")
        } catch {
            log.record(.error, detail: "could not restore LE Secure Connections on \(adapter.name): \(error.description)")
        }
    }

    func unregisterAgent() async {
        resolvePrompt(with: .cancel)
        let agent = pairing.agent
        pairing.agent = nil
        await agent?.unregister()
    }

    /// bluetoothd's question about a central on `adapterName`: the responder's own when it claims it (the relay's
    /// device leg); the profile's rules for a central on gattemu's own adapter; refused for any other (bluetoothd asks
    /// its one default agent about every adapter: another program's, another gattemu's).
    public func answer(_ request: PairingRequest, on adapterName: String) async -> PairingAnswer {
        let central = request.central
        if let answer = await pipeline.responder.ownPairing(request, on: adapterName, in: self) { return answer }
        guard let adapter, adapterName == adapter.name else {
            log.record(
                .pairing, central: central,
                detail:
                    "\(request) on \(adapterName): refused (not \(adapter.map { "gattemu's adapter \($0.name)" } ?? "an adapter gattemu serves"))"
            )
            return .reject
        }
        guard let security = profile.pairingSecurity else {
            log.record(.pairing, central: central, detail: "\(request): refused (the profile does not pair)")
            return .reject
        }
        switch request {
        case .pinCode:
            log.record(.pairing, central: central, detail: "\(request): refused (LE only)")
            return .reject
        case .service:
            log.record(.pairing, central: central, detail: "\(request): authorized")
            return .accept
        case .passkeyDisplay(_, let passkey, _):
            // Shown (GET /v1/pairing) until this pairing ends: ``pairingEnded(with:)``.
            pairing.displayed = PairingSnapshot.Displayed(central: central, passkey: passkey, device: false)
            log.record(.pairing, central: central, detail: "\(request): the central's user types it")
            return .accept
        case .authorization, .confirmation, .passkeyEntry:
            break
        }
        // Pairing faults: refuse, answer wrongly, or anything that applies to any operation (disconnect, …).
        let plan = faultState.engine.plan(for: FaultOperation(.pair, centrals: [central]))
        if !plan.isEmpty {
            record(plan, central: central, characteristic: nil)
            if plan.disconnect { scheduleDisconnect([central]) }
        }
        if plan.refusePairing {
            log.record(.pairing, central: central, detail: "\(request): refused (fault)")
            return .reject
        }
        if security.pairing == .refuse {
            log.record(.pairing, central: central, detail: "\(request): refused (profile: pairing refuse)")
            return .reject
        }
        let answer: PairingAnswer
        switch request {
        case .passkeyEntry where security.passkey != nil:
            let passkey = security.passkey ?? 0
            // The profile's passkey is the device's secret: the log says only that it was typed.
            log.record(.pairing, central: central, detail: "\(request): typed the profile's passkey")
            answer = .passkey(passkey)
        // (`where` binds to one pattern only: each case carries its own.)
        case .authorization where security.confirm == .auto, .confirmation where security.confirm == .auto:
            log.record(.pairing, central: central, detail: "\(request): accepted")
            answer = .accept
        case .authorization: answer = await ask(request, .justWorks)
        case .confirmation: answer = await ask(request, .numericComparison)
        case .passkeyEntry: answer = await ask(request, .passkeyEntry)
        case .passkeyDisplay, .pinCode, .service: return .reject  // answered above
        }
        guard plan.wrongPasskey else { return answer }
        switch answer {
        case .passkey(let passkey):
            let wrong = (passkey + 1) % 1_000_000
            log.record(.pairing, central: central, detail: "\(request): typed a wrong passkey instead (fault: wrong passkey)")
            return .passkey(wrong)
        case .accept:
            log.record(.pairing, central: central, detail: "\(request): the numbers differ (fault: wrong passkey)")
            return .reject
        default:
            return answer
        }
    }

    /// Waits for `POST /v1/pairing`, at most ``SecurityDefinition/promptSeconds``; a newer question replaces (cancels) an older one.
    func ask(_ request: PairingRequest, _ kind: PairingSnapshot.PromptKind, device: Bool = false) async -> PairingAnswer {
        resolvePrompt(with: .cancel)
        pairing.nextPrompt += 1
        let id = pairing.nextPrompt
        log.record(
            .pairing, central: request.central,
            detail: (device ? "device: " : "")
                + "\(request): prompt \(id) waiting for POST /v1/pairing (at most \(SecurityDefinition.promptSeconds) s)")
        Task(executorPreference: loop) { [weak self] in
            try? await Task.sleep(for: .seconds(SecurityDefinition.promptSeconds))
            await self?.promptTimedOut(id)
        }
        return await withCheckedContinuation { reply in
            pairing.prompt = PendingPairingPrompt(id: id, request: request, kind: kind, device: device, reply: reply)
        }
    }

    private func promptTimedOut(_ id: UInt64) {
        guard let prompt = pairing.prompt, prompt.id == id else { return }
        log.record(
            .pairing, central: prompt.request.central,
            detail: "\(prompt.request): refused (no answer in \(SecurityDefinition.promptSeconds) s)")
        resolvePrompt(with: .reject)
    }

    private func resolvePrompt(with answer: PairingAnswer) {
        guard let prompt = pairing.prompt else { return }
        pairing.prompt = nil
        prompt.reply.resume(returning: answer)
    }

    public func pairingCancelled(released: Bool) async {
        if let prompt = pairing.prompt {
            log.record(.pairing, central: prompt.request.central, detail: "\(prompt.request): cancelled by bluetoothd")
        }
        resolvePrompt(with: .cancel)
        pairing.displayed = nil
        // The object stays exported until the registrations are dropped (a restart of bluetoothd releases it first).
        if released { log.record(.note, detail: "bluetoothd released the pairing agent") }
    }

    // MARK: Control API

    public func pairingStatus() -> PairingSnapshot {
        guard let security = agentSecurity else { return PairingSnapshot(agent: false) }
        return PairingSnapshot(
            agent: pairing.agent?.isRegistered ?? false, security: security, prompt: pairing.prompt?.snapshot,
            displayed: pairing.displayed)
    }

    /// The pairing with `central` ended (it paired, or went away): the passkey displayed for it is no longer shown.
    func pairingEnded(with central: BluetoothAddress) {
        if pairing.displayed?.central == central { pairing.displayed = nil }
    }

    /// Answers the waiting prompt, if it is still `id` (a newer question gets no answer meant for an older one): a
    /// passkey for passkey entry; accept/refuse (or the number shown, for numeric comparison) otherwise.
    public func answerPairing(prompt id: UInt64, _ reply: PromptReply) throws(ControlFailure) -> PairingSnapshot.Prompt {
        guard let prompt = pairing.prompt else {
            throw ControlFailure(.conflict, "no pairing prompt is waiting (GET /v1/pairing shows it when there is one)")
        }
        guard prompt.id == id else {
            throw ControlFailure(
                .conflict,
                "prompt \(id) no longer waits: prompt \(prompt.id) (\(prompt.kind.rawValue) from \(prompt.request.central)) does; nothing was answered"
            )
        }
        let answer: PairingAnswer
        switch (prompt.request, reply) {
        case (.passkeyEntry, .passkey(let passkey)): answer = .passkey(passkey)
        case (.passkeyEntry, .accept(false)): answer = .reject
        case (.passkeyEntry, .accept(true)):
            throw ControlFailure(.conflict, "the central shows a passkey: answer {\"passkey\": \"123456\"} (or {\"accept\": false})")
        case (.confirmation(_, let shown), .passkey(let passkey)): answer = passkey == shown ? .accept : .reject
        case (_, .passkey):
            throw ControlFailure(.conflict, "just works asks for no passkey: answer {\"accept\": true|false}")
        case (_, .accept(let accept)): answer = accept ? .accept : .reject
        }
        let outcome: String =
            switch answer {
            case .passkey(let passkey): "typed \(Passkey.digits(passkey))"
            case .accept: "accepted"
            default: "refused"
            }
        log.record(
            .pairing, central: prompt.request.central,
            detail: (prompt.device ? "device: " : "") + "\(prompt.request): \(outcome) (control API)")
        resolvePrompt(with: answer)
        return prompt.snapshot
    }

    /// The centrals paired with the adapter; none before gattemu has an adapter, 503 while bluetoothd is gone.
    public func bonds() async throws(ControlFailure) -> [PairedCentral] {
        guard let adapter else { return [] }
        guard !stackLost else { throw ControlFailure(.unavailable, "bluetoothd is gone: its bonds cannot be read") }
        do {
            return try await adapter.pairedCentrals()
        } catch {
            throw ControlFailure(.unavailable, error.description)
        }
    }

    /// `forgetBonds` fault: bluetoothd forgets every paired central.
    func forgetAllBonds() async {
        guard let adapter else { return }
        do {
            for paired in try await adapter.pairedCentrals() {
                try await adapter.forget(central: paired.address)
                log.record(.unpaired, central: paired.address, detail: "keys forgotten (fault); the central was not told")
            }
        } catch {
            log.record(.error, detail: error.description)
        }
    }

    /// Makes bluetoothd forget a paired central (its keys, and the link if up), as a factory reset would.
    public func forgetBond(_ typed: BluetoothAddress) async throws(ControlFailure) {
        let known = try await bonds()
        guard known.contains(where: { $0.address == typed }) else {
            throw ControlFailure(.notFound, "no central \(typed) is paired", details: ["known": known.map(\.address.description)])
        }
        guard let adapter else { throw ControlFailure(.unavailable, "not registered with bluetoothd") }
        do {
            try await adapter.forget(central: typed)
        } catch {
            throw ControlFailure(.unavailable, error.description)
        }
        log.record(.unpaired, central: typed, detail: "keys forgotten (control API); the central was not told")
    }
}
