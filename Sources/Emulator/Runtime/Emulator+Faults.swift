import BlueZ
import Bluetooth
import DBus
import Profile

/// The runtime's fault and control bookkeeping, kept in one stored property of ``Emulator``.
struct FaultState: Sendable {
    var engine: FaultEngine
    /// Tasks of `on: start` faults and adapter-level actions, by fault id, so removing a fault cancels them.
    var scheduled: [String: Task<Void, Never>] = [:]
    /// True while a `silence` or `powerCycle` fault keeps advertising off.
    var silencedUntilResume = 0
    /// `silence` faults under way (counted in ``silencedUntilResume`` too); clearing the faults ends them.
    var silences = 0
    /// Bumped when clearing the faults ends the silences under way: a silence that wakes up to another epoch
    /// has been ended already.
    var silenceEpoch = 0

    init(seed: UInt64) {
        engine = FaultEngine(seed: seed)
    }
}

/// How long a dropped read/write is held before the runtime gives up on it: longer than ATT's 30 s
/// transaction timeout. (bluetoothd itself stops waiting after 5 s and answers the central with ATT
/// error 0x0E; a central behind another stack would time out.)
let droppedAnswerHold: Duration = .seconds(35)

extension Emulator {
    /// Asks the fault engine about a read or write and applies what does not depend on the answer:
    /// logs fired faults, waits out delays, holds dropped requests, throws injected errors and schedules
    /// disconnects. The returned plan's mutations are for the read answer or the written value.
    ///
    /// `answerable` is false for writes bluetoothd already acknowledged: a drop then only means the
    /// behaviour engine does not see the write, and an error cannot reach the central.
    func applyFaults(
        _ kind: FaultOperationKind, _ id: GattAttributeID, _ central: CentralID,
        answerable: Bool = true
    ) async throws(ATTError) -> FaultPlan {
        guard id.descriptor == nil else { return FaultPlan() }
        let plan = faultState.engine.plan(
            for: FaultOperation(kind, characteristic: id.characteristic, centrals: [central.address]))
        guard !plan.isEmpty else { return plan }
        record(plan, central: central.address, characteristic: id.characteristic)
        if plan.disconnect { scheduleDisconnect([central.address]) }
        if plan.delayMilliseconds > 0 { try? await Task.sleep(for: .milliseconds(plan.delayMilliseconds)) }
        if plan.drop {
            guard answerable else {
                log.record(
                    .note, central: central.address, characteristic: id.characteristic, descriptor: id.descriptor,
                    detail: "write dropped: not handled")
                throw .failed  // bluetoothd ignores it; the caller stops here.
            }
            log.record(
                .note, central: central.address, characteristic: id.characteristic, descriptor: id.descriptor,
                detail: "\(kind.rawValue) dropped: no answer")
            try? await Task.sleep(for: droppedAnswerHold)
            throw .failed
        }
        if let error = plan.error {
            let gattError = error
            if !answerable {
                log.record(
                    .note, central: central.address, characteristic: id.characteristic, descriptor: id.descriptor,
                    detail: "error \(gattError) not delivered: bluetoothd already acknowledged this write")
            } else {
                recordOperation(.answer, central: central.address, attribute: id, detail: "error \(gattError)")
            }
            throw gattError
        }
        return plan
    }

    /// `value` as the plan's byte faults (corrupt, truncate, rewrite) change it; a result cut to the ATT value limit
    /// is logged.
    func mutated(
        _ value: [UInt8], by plan: FaultPlan, central: BluetoothAddress?, characteristic: CharacteristicID, descriptor: String? = nil
    ) -> [UInt8] {
        guard !plan.mutations.isEmpty else { return value }
        let (bytes, cut) = plan.mutated(value)
        if cut > 0 {
            log.record(
                .note, central: central, characteristic: characteristic, descriptor: descriptor,
                detail: "faults made a value of \(bytes.count + cut) bytes: cut to \(bytes.count), the ATT value limit")
        }
        return bytes
    }

    /// A written value as the plan's byte faults change it before the behaviour engine sees it. A change is logged
    /// with the value the engine gets (the `write` event before it has the central's).
    func mutatedWrite(
        _ value: [UInt8], by plan: FaultPlan, central: BluetoothAddress, characteristic: CharacteristicID, descriptor: String? = nil
    ) -> [UInt8] {
        let bytes = mutated(value, by: plan, central: central, characteristic: characteristic, descriptor: descriptor)
        if bytes != value {
            log.record(
                .note, central: central, characteristic: characteristic, descriptor: descriptor, value: bytes,
                detail: "written value changed by faults (\(value.count) → \(bytes.count) bytes): the behaviour engine gets this one")
        }
        return bytes
    }

    /// Applies faults to a connection: disconnects and adapter-level actions.
    func applyConnectFaults(_ address: BluetoothAddress) {
        let plan = faultState.engine.plan(for: FaultOperation(.connect, centrals: [address]))
        guard !plan.isEmpty else { return }
        record(plan, central: address, characteristic: nil)
        if plan.disconnect { scheduleDisconnect([address]) }
    }

    /// Logs each fired fault and starts its adapter-level actions.
    func record(_ plan: FaultPlan, central: BluetoothAddress?, characteristic: CharacteristicID?) {
        for fired in plan.fired {
            log.record(.fault, central: central, characteristic: characteristic, detail: fired.detail)
        }
        for action in plan.adapterActions { startAdapterAction(action) }
    }

    /// Disconnects centrals shortly after the current operation is answered.
    func scheduleDisconnect(_ addresses: [BluetoothAddress]) {
        Task(executorPreference: loop) { [weak self] in
            try? await Task.sleep(for: .milliseconds(50))
            for address in addresses { await self?.disconnectCentral(address) }
        }
    }

    func disconnectCentral(_ address: BluetoothAddress) async {
        log.record(.note, central: address, detail: "disconnecting (fault)")
        do {
            try await adapter?.disconnect(central: address)
        } catch {
            log.record(.error, central: address, detail: error.description)
        }
    }

    /// Runs `silence`, `advertise`, `powerCycle` (and `disconnect` of every central) in the background.
    func startAdapterAction(_ action: FaultAction) {
        Task(executorPreference: loop) { [weak self] in await self?.performAdapterAction(action) }
    }

    func performAdapterAction(_ action: FaultAction) async {
        switch action {
        case .silence(let ms):
            faultState.silencedUntilResume += 1
            faultState.silences += 1
            let epoch = faultState.silenceEpoch
            await stopAdvertising()
            try? await Task.sleep(for: .milliseconds(ms))
            guard faultState.silenceEpoch == epoch else { return }  // ended when the faults were cleared
            faultState.silences -= 1
            faultState.silencedUntilResume -= 1
            if faultState.silencedUntilResume == 0, engine.isAdvertising, !stopped { await resumeAdvertising() }
        case .advertise(let variant):
            for effect in engine.switchAdvertisement(to: variant) { await perform(effect, central: latestCentral) }
        case .powerCycle(let ms):
            guard let adapter else { return }
            faultState.silencedUntilResume += 1
            await stopAdvertising()
            do {
                try await adapter.set("Powered", .boolean(false))
                log.record(.note, detail: "adapter \(adapter.name) powered off (fault)")
                try? await Task.sleep(for: .milliseconds(ms))
                try await adapter.set("Powered", .boolean(true))
                log.record(.note, detail: "adapter \(adapter.name) powered on (fault)")
            } catch {
                log.record(.error, detail: error.description)
            }
            faultState.silencedUntilResume -= 1
            if faultState.silencedUntilResume == 0, engine.isAdvertising, !stopped { await resumeAdvertising() }
        case .disconnect:
            for address in centrals.connected { await disconnectCentral(address) }
        case .forgetBonds:
            await forgetAllBonds()
        default:
            break
        }
    }

    /// Ends the `silence` faults under way (the faults were cleared): advertising resumes unless a power cycle
    /// still keeps it off.
    func endSilences() async {
        guard faultState.silences > 0 else { return }
        faultState.silencedUntilResume -= faultState.silences
        faultState.silences = 0
        faultState.silenceEpoch += 1
        log.record(.note, detail: "silence ended: faults cleared")
        if faultState.silencedUntilResume == 0, engine.isAdvertising, !stopped { await resumeAdvertising() }
    }

    func resumeAdvertising() async {
        do {
            try await startAdvertising()
        } catch {
            log.record(.error, detail: error.description)
        }
    }
}
