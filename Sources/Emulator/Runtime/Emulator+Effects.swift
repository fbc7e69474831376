import BlueZ
import Bluetooth
import Profile

extension Emulator {
    /// How many events' after-the-answer effects may wait in the chain (behind delays) before the effects of
    /// new events are dropped, with an `.error` event.
    static let maximumPendingEffectChains = 64
    /// How many operations may wait for the effects of earlier events before their answer; past that, an
    /// operation is answered at once and its effects are dropped, with an `.error` event. bluetoothd gives an
    /// application 5 s to answer and then answers the central itself, but the call stays with gattemu: without
    /// this bound a central writing without pause behind a long delay kept every call, and gattemu grew.
    static let maximumWaitingOperations = 64

    /// Runs an outcome: effects up to the first `.reply` now (so delays before it delay the answer), the rest
    /// after the answer, in order with the effects of earlier events. Returns the reply, if any.
    ///
    /// At most ``maximumPendingEffectChains`` events' remaining effects wait at a time; past that, an event's
    /// remaining effects are dropped and logged, so a profile that delays after every write cannot grow the
    /// chain without bound; at most ``maximumWaitingOperations`` operations wait for the chain before their
    /// answer, and the next are answered at once without their effects (logged too).
    func run(_ outcome: EngineOutcome, central: CentralID) async throws(ATTError) -> Reply? {
        for rule in outcome.firedRules {
            log.record(.rule, central: central.logged, detail: rule)
        }
        var effects = outcome.effects[...]
        var reply: Reply?
        if let index = effects.firstIndex(where: \.isReply) {
            if effectTail != nil {
                guard operationsWaitingForEffects < Self.maximumWaitingOperations else {
                    guard case .reply(let answer) = effects[index] else { return nil }
                    let others = effects.filter { !$0.isReply }
                    log.record(
                        .error, central: central.logged,
                        detail: "answered at once without waiting"
                            + (others.isEmpty ? "" : ", its other effects dropped (\(Self.describe(others)))")
                            + ": \(operationsWaitingForEffects) earlier operations are still waiting for the effects of earlier events")
                    return answer
                }
                operationsWaitingForEffects += 1
                await waitForEarlierEffects()
                operationsWaitingForEffects -= 1
            }
            for effect in effects[..<index] { await perform(effect, central: central) }
            if case .reply(let answer) = effects[index] { reply = answer }
            effects = effects[(index + 1)...]
        }
        let rest = Array(effects)
        guard !rest.isEmpty else { return reply }
        guard pendingEffectChains < Self.maximumPendingEffectChains else {
            log.record(
                .error, central: central.logged,
                detail: "dropped \(rest.count) effect\(rest.count == 1 ? "" : "s") after the answer "
                    + "(\(Self.describe(rest))): the effects of \(pendingEffectChains) earlier events are still waiting")
            return reply
        }
        let previous = effectTail
        let id = nextEffectChain
        nextEffectChain += 1
        let chain = Task(executorPreference: loop) { [weak self] in
            await previous?.value
            for effect in rest {
                await self?.perform(effect, central: central)
            }
            await self?.effectChainFinished(id)
        }
        effectChains[id] = chain
        effectTail = chain
        return reply
    }

    /// How many events' after-the-answer effects are waiting or running.
    var pendingEffectChains: Int { effectChains.count }

    private func effectChainFinished(_ id: UInt64) {
        effectChains[id] = nil
    }

    /// Cuts every waiting chain short: their delays end at once, their other effects still run, in order.
    func hurryEffectChains() {
        for chain in effectChains.values { chain.cancel() }
    }

    /// The kinds of some effects, for the message about dropping them: "delay, notify tx".
    static func describe(_ effects: [Effect]) -> String {
        effects.prefix(4).map { effect in
            switch effect {
            case .reply: "reply"
            case .notify(let characteristic, _, _, let indicate): "\(indicate ? "indicate" : "notify") \(characteristic)"
            case .setValue(let characteristic, _): "set value \(characteristic)"
            case .delay: "delay"
            case .switchAdvertisement: "advertise"
            case .startAdvertising: "start advertising"
            case .stopAdvertising: "stop advertising"
            case .disconnect: "disconnect"
            case .scheduleTimer(let id, _, _): "start timer \(id)"
            case .cancelTimer(let id): "cancel timer \(id)"
            case .log: "log"
            case .send(let channel, _, _): "send \(channel)"
            case .stream(let channel, _, _): "stream \(channel)"
            case .closeChannel(let channel, _): "close \(channel)"
            }
        }.joined(separator: ", ") + (effects.count > 4 ? ", …" : "")
    }

    private func waitForEarlierEffects() async {
        await effectTail?.value
    }

    func perform(_ effect: Effect, central: CentralID) async {
        switch effect {
        case .reply:
            break  // Only the first reply answers the request.
        case .notify(let characteristic, let value, let target, let indicate):
            // Through the fault engine (Emulator+Faults.swift), which logs and delivers.
            await sendNotification(characteristic, value: value, target: target, indicate: indicate)
        case .setValue(let characteristic, let value):
            application?.setValue(characteristic, value: value)
        case .delay(let duration):
            try? await Task.sleep(for: duration)
        case .switchAdvertisement(let variant):
            log.record(.note, detail: "advertisement variant \(variant ?? "(base)")")
            await refreshAdvertisements()
        case .startAdvertising:
            do {
                try await startAdvertising()
            } catch {
                log.record(.error, detail: error.description)
            }
        case .stopAdvertising:
            await stopAdvertising()
        case .disconnect(let target):
            log.record(.note, central: target.address, detail: "disconnecting")
            do {
                try await adapter?.disconnect(central: target.address)
            } catch {
                log.record(.error, central: target.address, detail: error.description)
            }
        case .scheduleTimer(let id, let after, let repeating):
            let deadline = ContinuousClock.now + after
            if !repeating, let armed = timers[id], !armed.repeating, armed.deadline <= deadline {
                // Re-armed (e.g. the Noke relock on every command): the sleeping task sleeps on to the new
                // deadline, instead of a task cancelled and created per operation.
                timers[id]?.deadline = deadline
                break
            }
            timers[id]?.task.cancel()
            let task = Task(executorPreference: loop) { [weak self] in
                if repeating {
                    repeat {
                        try? await Task.sleep(for: after)
                        if Task.isCancelled { return }
                        await self?.timerFired(id, repeating: true)
                    } while !Task.isCancelled
                    return
                }
                var wake = deadline
                while true {
                    try? await Task.sleep(until: wake, clock: .continuous)
                    guard !Task.isCancelled, let later = await self?.timerDue(id) else { return }
                    wake = later
                }
            }
            timers[id] = ArmedTimer(task: task, deadline: deadline, repeating: repeating)
        case .cancelTimer(let id):
            timers[id]?.task.cancel()
            timers[id] = nil
        case .log(let text):
            log.record(.note, central: central.logged, detail: text)
        case .send(let channel, let value, let links):
            queue(.sdu(value), channel: channel, links: links)
        case .stream(let channel, let source, let links):
            queue(.stream(source), channel: channel, links: links)
        case .closeChannel(let channel, let links):
            queue(.close, channel: channel, links: links)
        }
    }

    /// A one-shot timer's task woke: fires it (nil) unless it was re-armed to a later deadline (returned).
    func timerDue(_ id: String) async -> ContinuousClock.Instant? {
        guard !Task.isCancelled, let armed = timers[id] else { return nil }
        if armed.deadline > .now { return armed.deadline }
        await timerFired(id, repeating: false)
        return nil
    }

    func timerFired(_ id: String, repeating: Bool) async {
        if !repeating { timers[id] = nil }
        _ = try? await run(engine.handle(.timer(id)), central: latestCentral)
    }
}

/// A running profile timer: its task and, for one-shot timers, when it fires.
struct ArmedTimer {
    var task: Task<Void, Never>
    var deadline: ContinuousClock.Instant
    var repeating: Bool
}
