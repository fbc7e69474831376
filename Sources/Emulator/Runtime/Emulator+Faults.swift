import BlueZ
import Bluetooth
import DBus
import Profile

/// The runtime's fault and control bookkeeping, kept in one stored property of ``Emulator``.
struct FaultState: Sendable {
    var engine: FaultEngine
    /// Tasks of `on: start` faults and adapter-level actions, by fault id, so removing a fault cancels them.
    var scheduled: [String: Task<Void, Never>] = [:]
    /// The ATT MTU each central last reported with a request.
    var mtus: [BluetoothAddress: ATTMTU] = [:]
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
                log.record(.note, central: central.address, characteristic: id.description, detail: "write dropped: not handled")
                throw .failed  // bluetoothd ignores it; the caller stops here.
            }
            log.record(.note, central: central.address, characteristic: id.description, detail: "\(kind.rawValue) dropped: no answer")
            try? await Task.sleep(for: droppedAnswerHold)
            throw .failed
        }
        if let error = plan.error {
            let gattError = error
            if !answerable {
                log.record(
                    .note, central: central.address, characteristic: id.description,
                    detail: "error \(gattError) not delivered: bluetoothd already acknowledged this write")
            } else {
                recordOperation(.answer, central: central.address, characteristic: id.description, detail: "error \(gattError)")
            }
            throw gattError
        }
        return plan
    }

    /// `value` as the plan's byte faults (corrupt, truncate, rewrite) change it; a result cut to the ATT value limit
    /// is logged.
    func mutated(_ value: [UInt8], by plan: FaultPlan, central: BluetoothAddress?, characteristic: String) -> [UInt8] {
        guard !plan.mutations.isEmpty else { return value }
        let (bytes, cut) = plan.mutated(value)
        if cut > 0 {
            log.record(
                .note, central: central, characteristic: characteristic,
                detail: "faults made a value of \(bytes.count + cut) bytes: cut to \(bytes.count), the ATT value limit")
        }
        return bytes
    }

    /// A written value as the plan's byte faults change it before the behaviour engine sees it. A change is logged
    /// with the value the engine gets (the `write` event before it has the central's).
    func mutatedWrite(_ value: [UInt8], by plan: FaultPlan, central: BluetoothAddress, characteristic: String) -> [UInt8] {
        let bytes = mutated(value, by: plan, central: central, characteristic: characteristic)
        if bytes != value {
            log.record(
                .note, central: central, characteristic: characteristic, value: bytes,
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

    /// Sends a notification or indication through the fault engine: delayed, dropped, corrupted,
    /// truncated, duplicated or held back for reordering as the faults say, each send logged.
    func sendNotification(_ characteristic: String, value: [UInt8], target: NotificationTarget, indicate: Bool) async {
        let address: BluetoothAddress? = if case .central(let id) = target { id.address } else { nil }
        let recipients =
            address.map { [$0] }
            ?? engine.subscribers[characteristic]?.map(\.address) ?? connectedCentrals
        let plan = faultState.engine.plan(
            for: FaultOperation(indicate ? .indicate : .notify, characteristic: characteristic, centrals: recipients))
        if !plan.isEmpty {
            record(plan, central: address, characteristic: characteristic)
            if plan.disconnect { scheduleDisconnect(recipients) }
            if plan.delayMilliseconds > 0 { try? await Task.sleep(for: .milliseconds(plan.delayMilliseconds)) }
        }
        _ = mutated(value, by: plan, central: address, characteristic: characteristic)  // logs a cut; the engine mutates again
        let values = faultState.engine.notificationValues(value, characteristic: characteristic, plan: plan)
        if values.isEmpty {
            log.record(
                .note, central: address, characteristic: characteristic, value: value,
                detail: plan.drop
                    ? "\(indicate ? "indication" : "notification") dropped"
                    : "\(indicate ? "indication" : "notification") held back (reorder)")
        }
        for bytes in values {
            for piece in pieces(bytes, characteristic: characteristic, recipients: recipients, indicate: indicate) {
                await deliver(characteristic, value: piece, central: address, indicate: indicate)
            }
        }
    }

    /// A value as it must leave for `recipients`: whole when it fits every recipient's ATT MTU − 3 (or no MTU is
    /// known); in MTU − 3 pieces for a characteristic with `fragment`; else whole, with a note that BlueZ will
    /// send only the first MTU − 3 bytes — gattemu never lets that truncation pass silently.
    func pieces(_ value: [UInt8], characteristic: String, recipients: [BluetoothAddress], indicate: Bool) -> [[UInt8]] {
        // Every central can take 20 bytes (the minimum ATT MTU, 23): the common case costs one comparison.
        guard value.count > 20, let mtu = recipients.compactMap({ faultState.mtus[$0] }).min(), value.count > mtu.payload else {
            return [value]
        }
        let size = max(1, mtu.payload)
        let what = indicate ? "indication" : "notification"
        if profile.characteristic(characteristic)?.fragment == true {
            let pieces = stride(from: 0, to: value.count, by: size).map { Array(value[$0..<min($0 + size, value.count)]) }
            log.record(
                .note, characteristic: characteristic, value: value,
                detail: "\(what) of \(value.count) bytes sent in \(pieces.count) pieces of at most \(size) (ATT MTU \(mtu))")
            return pieces
        }
        let who = recipients.filter { faultState.mtus[$0] == mtu }.map(\.description).joined(separator: ",")
        log.record(
            .note, central: recipients.count == 1 ? recipients[0] : nil, characteristic: characteristic, value: value,
            detail: "\(what) of \(value.count) bytes is longer than ATT MTU \(mtu) − 3 of \(who): BlueZ sends only the first \(size) bytes"
                + " (\"fragment\": true sends it in pieces)")
        return [value]
    }

    /// Hands one value to BlueZ and logs how it left. Socket writes happen without leaving the actor, so the
    /// log keeps them in order with the events around them (a disconnection the notification preceded); only a
    /// switch of characteristic mid-burst may first wait for bluetoothd (``keepOrderAcrossSockets(before:)``).
    func deliver(_ characteristic: String, value: [UInt8], central address: BluetoothAddress?, indicate: Bool) async {
        await keepOrderAcrossSockets(before: characteristic)
        do {
            var delivery = try application?.notifyOnSockets(characteristic, value: value, central: address)
            if case .sockets(let centrals, _)? = delivery, !centrals.isEmpty { lastSocketCharacteristic = characteristic }
            if delivery == nil, let application {
                delivery = try await application.notify(characteristic, value: value, central: address)
            }
            let what = indicate ? "indication" : "notification"
            if case .sockets(_, let dropped)? = delivery {
                for (socket, count) in dropped.sorted(by: { $0.key < $1.key }) {
                    log.record(
                        .note, central: socket.central ?? address, characteristic: characteristic, value: value,
                        detail: "\(what) dropped: the central is not reading its notification socket (\(count) dropped on it so far)")
                }
            }
            if case .sockets(let centrals, let dropped)? = delivery, centrals.isEmpty {
                if dropped.isEmpty {
                    log.record(
                        .note, central: address, characteristic: characteristic, value: value,
                        detail: "\(what) not sent: no notification socket for this central")
                }
                return
            }
            let how =
                switch delivery {
                case .sockets(let centrals, _)?:
                    "AcquireNotify socket" + (centrals.count == 1 ? "" : "s") + " " + centrals.map(\.description).joined(separator: ",")
                case .propertiesChanged?: "PropertiesChanged"
                case nil: "not sent (no GATT application)"
                }
            recordOperation(indicate ? .indicate : .notify, central: address, characteristic: characteristic, value: value, detail: how)
        } catch {
            log.record(.error, characteristic: characteristic, detail: "notification failed: \(error)")
        }
    }

    /// Before a notification on another characteristic than the latest one sent on a socket: waits (at most
    /// ``Emulator/socketOrderWait``, sleeping, never blocking the loop) until bluetoothd has read that one's socket.
    /// bluetoothd serves each characteristic's socket on its own, so a burst A, B, A could reach the central as
    /// A, A, B (seen replaying a real capture); what it has read is in its ATT queue, which keeps order.
    /// A burst on one characteristic costs nothing here.
    func keepOrderAcrossSockets(before characteristic: String) async {
        guard let last = lastSocketCharacteristic, last != characteristic, let application,
            application.unreadNotificationBytes(last) > 0
        else { return }
        let clock = ContinuousClock()
        let deadline = clock.now + Self.socketOrderWait
        while application.unreadNotificationBytes(last) > 0, clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    /// The longest a notification waits for bluetoothd to read another characteristic's socket (a central that
    /// is not reading fills the socket: then order gives way to progress).
    static let socketOrderWait: Duration = .milliseconds(50)

    /// Logs each fired fault and starts its adapter-level actions.
    func record(_ plan: FaultPlan, central: BluetoothAddress?, characteristic: String?) {
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
            for address in connectedCentrals { await disconnectCentral(address) }
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
