import Bluetooth

extension BehaviourEngine {
    /// Handles one event: updates state and returns the rules that fired and the effects to execute. A write to
    /// a characteristic with `frames` is handled as the whole frames it completes (``handleFrames``).
    public mutating func handle(_ event: EngineEvent) -> EngineOutcome {
        if case .write(let id, let central, let value, let withResponse) = event, !value.isEmpty,
            let characteristic = profile.characteristic(id), let format = characteristic.frames
        {
            let limit = characteristic.maxLength ?? TemplateBuiltins.maximumLength
            if value.count <= limit {
                return handleFrames(format, characteristic: id, central: central, value: value, withResponse: withResponse, limit: limit)
            }
        }
        return handleOne(event)
    }

    /// Handles one event as it is (see ``handle(_:)``).
    mutating func handleOne(_ event: EngineEvent) -> EngineOutcome {
        // Per-connection state: the event's central's copy (for timers and triggers, the latest central's)
        // is swapped into `state` while the event is handled, and kept apart again afterwards.
        let owner = profile.connectionState.isEmpty ? nil : event.central ?? centrals.last
        if let owner {
            if case .connect = event { connectionStates[owner] = nil }
            let saved = connectionStates[owner]
            for name in profile.connectionState { state[name] = saved?[name] ?? initialConnectionState[name] }
        }
        defer {
            if let owner {
                if case .disconnect = event {
                    connectionStates[owner] = nil
                } else {
                    var copy: [String: ProfileValue] = [:]
                    for name in profile.connectionState { copy[name] = state[name] }
                    connectionStates[owner] = copy
                }
            }
        }
        var outcome = EngineOutcome()
        guard prepare(for: event, into: &outcome) else { return outcome }
        let arguments: [String: String]
        if case .trigger(_, let given) = event { arguments = given } else { arguments = [:] }

        var stopped = false
        for pass in [false, true] where !stopped {
            // The second pass runs `otherwise` rules, only when no regular rule fired.
            if pass && !outcome.firedRules.isEmpty { break }
            // Of the `closestTo` rules that could fire, only the closest one does (found when the first is met).
            var closest: Int??
            for (index, rule) in profile.rules.enumerated() where rule.otherwise == pass {
                guard matches(rule.trigger, event, arguments: arguments),
                    rule.conditions.allSatisfy({ holds($0, arguments: arguments) })
                else { continue }
                if case .write(_, let matcher) = rule.trigger, matcher.closestTo != nil {
                    if closest == nil { closest = closestRule(pass: pass, event: event, arguments: arguments) }
                    guard closest == .some(index) else { continue }
                }
                outcome.firedRules.append(rule.id)
                for action in rule.actions { perform(action, for: event, arguments: arguments, into: &outcome) }
                if rule.stop {
                    stopped = true
                    break
                }
            }
        }
        publishAdvertisementChanges(into: &outcome)
        return outcome
    }

    /// The index of the `closestTo` rule of this pass whose bytes are closest to the written value (ties: the
    /// first), among those whose other matchers and conditions hold.
    private mutating func closestRule(pass: Bool, event: EngineEvent, arguments: [String: String]) -> Int? {
        guard case .write(_, _, let value, _) = event else { return nil }
        var best: (index: Int, distance: Int)?
        for (index, rule) in profile.rules.enumerated() where rule.otherwise == pass {
            guard case .write(_, let matcher) = rule.trigger, let reference = matcher.closestTo,
                matches(rule.trigger, event, arguments: arguments),
                rule.conditions.allSatisfy({ holds($0, arguments: arguments) })
            else { continue }
            let distance = WriteMatcher.distance(value, reference)
            if best.map({ distance < $0.distance }) ?? true { best = (index, distance) }
        }
        return best?.index
    }

    /// Bookkeeping before rules run; false when the event is not handled further.
    private mutating func prepare(for event: EngineEvent, into outcome: inout EngineOutcome) -> Bool {
        switch event {
        case .connect(let central):
            if !centrals.contains(central) { centrals.append(central) }
            for characteristic in profile.characteristics where characteristic.value.regenerate == .connection {
                regenerate(characteristic, event: event, into: &outcome)
            }
            for timer in profile.timers where timer.startOnConnect {
                schedule(timer, after: nil, into: &outcome)
            }
        case .disconnect(let central):
            centrals.removeAll { $0 == central }
            heldFrames[central] = nil
            for id in openChannels.keys { openChannels[id]?.removeAll { $0.central == central } }
            for id in subscribers.keys { subscribers[id]?.removeAll { $0 == central } }
            if centrals.isEmpty {
                for timer in profile.timers where timer.cancelOnDisconnect && activeTimers.contains(timer.id) {
                    activeTimers.remove(timer.id)
                    outcome.effects.append(.cancelTimer(id: timer.id))
                }
            }
        case .read(let id, _, let offset):
            guard let characteristic = profile.characteristic(id) else {
                outcome.effects += [.log("read of unknown characteristic \"\(id)\""), .reply(.error(.notSupported))]
                return false
            }
            if characteristic.value.regenerate == .read, offset == 0 {
                regenerate(characteristic, event: event, into: &outcome)
            }
        case .write(let id, _, let value, _):
            guard let characteristic = profile.characteristic(id) else {
                outcome.effects += [.log("write to unknown characteristic \"\(id)\""), .reply(.error(.notSupported))]
                return false
            }
            if value.count > (characteristic.maxLength ?? TemplateBuiltins.maximumLength) {
                outcome.effects.append(.reply(.error(.invalidValueLength)))
                return false
            }
            let hasWriteRules = profile.rules.contains {
                if case .write(id, _) = $0.trigger { return true }
                return false
            }
            if characteristic.storeWrites ?? !hasWriteRules {
                values[id] = value
                outcome.effects.append(.setValue(characteristic: id, value: value))
            }
        case .subscribe(let id, let central):
            if !subscribers[id, default: []].contains(central) { subscribers[id, default: []].append(central) }
        case .unsubscribe(let id, let central):
            subscribers[id]?.removeAll { $0 == central }
        case .timer(let id):
            // A timer that was cancelled (or never scheduled) may still fire late; ignore it.
            guard activeTimers.contains(id) else { return false }
            if profile.timers.first(where: { $0.id == id })?.repeats != true { activeTimers.remove(id) }
        case .trigger(let name, _):
            guard profile.triggers.contains(where: { $0.name == name }) else {
                outcome.effects.append(.log("unknown trigger \"\(name)\""))
                return false
            }
        case .channelOpen(let id, let link):
            if !openChannels[id, default: []].contains(link) { openChannels[id, default: []].append(link) }
        case .sdu(let id, let link, _):
            // An SDU of a channel the engine does not know open (closed meanwhile) is not handled.
            guard openChannels[id]?.contains(link) == true else { return false }
        case .channelClose(let id, let link):
            guard openChannels[id]?.contains(link) == true else { return false }
            openChannels[id]?.removeAll { $0 == link }
        }
        return true
    }

    private mutating func regenerate(
        _ characteristic: CharacteristicDefinition, event: EngineEvent, into outcome: inout EngineOutcome
    ) {
        let value = fit(
            renderChecked(characteristic.value.template, event: event), to: characteristic.id,
            what: "\(characteristic.path).value", into: &outcome.effects)
        values[characteristic.id] = value
        outcome.effects.append(.setValue(characteristic: characteristic.id, value: value))
    }

    /// The channels an action on channel `id` goes to: the event's own when it is one of `id`'s (the channel that
    /// opened, or sent the SDU), else every open channel of `id`.
    func links(of id: String, for event: EngineEvent) -> [UInt64] {
        switch event {
        case .channelOpen(id, let link), .sdu(id, let link, _):
            return openChannels[id]?.contains(link) == true ? [link.id] : []
        default:
            return (openChannels[id] ?? []).map(\.id)
        }
    }

    mutating func schedule(_ timer: TimerDefinition, after: DurationSpec?, into outcome: inout EngineOutcome) {
        activeTimers.insert(timer.id)
        let delay = milliseconds(
            after ?? timer.after, minimum: ProfileLimits.minimumTimerMilliseconds, use: "timer \(timer.id)",
            into: &outcome.effects)
        outcome.effects.append(.scheduleTimer(id: timer.id, after: .milliseconds(delay), repeating: timer.repeats))
    }

    /// Emits `.switchAdvertisement` for the current variant when state changed what the advertisements say.
    /// Takes the advertisements as they are now as the ones BlueZ has.
    mutating func markAdvertisementsPublished() {
        publishedAdvertisements = advertisements()
        publishedInputs = (advertisementVariant, state, variables)
    }

    mutating func publishAdvertisementChanges(into outcome: inout EngineOutcome) {
        // The advertisements depend only on these; most events change none of them (nothing to render).
        guard
            advertisementVariant != publishedInputs.variant || state != publishedInputs.state
                || variables != publishedInputs.variables
        else { return }
        let current = advertisements()
        publishedInputs = (advertisementVariant, state, variables)
        guard current != publishedAdvertisements else { return }
        publishedAdvertisements = current
        let switched = outcome.effects.contains {
            if case .switchAdvertisement = $0 { return true }
            return false
        }
        if !switched { outcome.effects.append(.switchAdvertisement(variant: advertisementVariant)) }
    }

    // MARK: Actions

    /// A rendered attribute value cut to the characteristic's `maxLength` (else 512), with a `.log` effect when
    /// it was longer or a template value was cut on the way.
    mutating func fit(
        _ rendered: (bytes: [UInt8], capped: Bool), to characteristic: CharacteristicID, what: String, into effects: inout [Effect]
    ) -> [UInt8] {
        if rendered.capped {
            effects.append(
                .log(
                    "\(what): a template value reached a limit and was cut (values at \(ProfileLimits.valueLength) bytes, counts at \(TemplateBuiltins.maximumLength))"
                ))
        }
        guard rendered.bytes.count > smallestValueLimit else { return rendered.bytes }
        let limit = valueLimits[characteristic] ?? ProfileLimits.attributeValueLength
        guard rendered.bytes.count > limit else { return rendered.bytes }
        effects.append(
            .log("\(what): the value for \"\(characteristic)\" is \(rendered.bytes.count) bytes, cut to its maximum of \(limit)"))
        return Array(rendered.bytes.prefix(limit))
    }

    private mutating func perform(
        _ action: Action, for event: EngineEvent, arguments: [String: String], into outcome: inout EngineOutcome
    ) {
        switch action.kind {
        case .reply(let template):
            let rendered = renderChecked(template, event: event, arguments: arguments)
            var bytes = rendered.bytes
            if case .read(let id, _, _) = event {
                bytes = fit(rendered, to: id, what: action.path, into: &outcome.effects)
            }
            if case .read(_, _, let offset) = event {
                guard offset <= bytes.count else {
                    outcome.effects.append(.reply(.error(.invalidOffset)))
                    return
                }
                bytes.removeFirst(max(0, offset))
            }
            outcome.effects.append(.reply(.value(bytes)))
        case .succeed:
            outcome.effects.append(.reply(.success))
        case .fail(let error):
            outcome.effects.append(.reply(.error(error)))
        case .notify(let id, let template, let toAll, let indicate):
            let bytes = fit(renderChecked(template, event: event, arguments: arguments), to: id, what: action.path, into: &outcome.effects)
            values[id] = bytes
            let target: NotificationTarget = if !toAll, let central = event.central { .central(central) } else { .allSubscribers }
            outcome.effects.append(.notify(characteristic: id, value: bytes, target: target, indicate: indicate))
        case .send(let id, let template):
            let rendered = renderChecked(template, event: event, arguments: arguments)
            if rendered.capped {
                outcome.effects.append(.log("\(action.path): a template value reached a limit and was cut"))
            }
            outcome.effects.append(.send(channel: id, value: rendered.bytes, links: links(of: id, for: event)))
        case .stream(let id, let source):
            outcome.effects.append(.stream(channel: id, source: source, links: links(of: id, for: event)))
        case .closeChannel(let id):
            outcome.effects.append(.closeChannel(channel: id, links: links(of: id, for: event)))
        case .setValue(let id, let template):
            let bytes = fit(renderChecked(template, event: event, arguments: arguments), to: id, what: action.path, into: &outcome.effects)
            values[id] = bytes
            outcome.effects.append(.setValue(characteristic: id, value: bytes))
        case .set(let name, let assignment):
            let isState = state[name] != nil || variables[name] == nil
            let old = isState ? state[name] : variables[name]
            let new: ProfileValue
            switch assignment {
            case .literal(let value): new = value
            case .template(let template):
                // Rendering never builds more than ProfileLimits.valueLength bytes: a value that would grow
                // without bound (`{buf}{buf}`) stays at the limit.
                let rendered = renderChecked(template, event: event, arguments: arguments)
                if rendered.capped {
                    outcome.effects.append(
                        .log(
                            "\(action.path): the value for \"\(name)\" reached a limit and was cut (values at \(ProfileLimits.valueLength) bytes, counts at \(TemplateBuiltins.maximumLength))"
                        ))
                }
                new = .bytes(rendered.bytes)
            case .increment(let amount):
                if case .number(let number)? = old { new = .number(number &+ amount) } else { new = .number(amount) }
            }
            if isState { state[name] = new } else { variables[name] = new }
        case .delay(let duration):
            outcome.effects.append(.delay(.milliseconds(milliseconds(duration, use: action.path, into: &outcome.effects))))
        case .advertise(let variant):
            advertisementVariant = variant
            markAdvertisementsPublished()
            outcome.effects.append(.switchAdvertisement(variant: variant))
        case .startAdvertising:
            isAdvertising = true
            outcome.effects.append(.startAdvertising)
        case .stopAdvertising:
            isAdvertising = false
            outcome.effects.append(.stopAdvertising)
        case .disconnect:
            // From a timer or named trigger, every connected central is disconnected.
            let targets = event.central.map { [$0] } ?? centrals
            outcome.effects += targets.map { .disconnect($0) }
        case .startTimer(let id, let after):
            guard let timer = profile.timers.first(where: { $0.id == id }) else { return }
            schedule(timer, after: after, into: &outcome)
        case .cancelTimer(let id):
            if activeTimers.remove(id) != nil { outcome.effects.append(.cancelTimer(id: id)) }
        case .log(let template):
            let text = String(decoding: render(template, event: event, arguments: arguments), as: UTF8.self)
            outcome.effects.append(.log(text))
        }
    }
}
