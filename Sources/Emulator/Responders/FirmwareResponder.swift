import BlueZ
import Bluetooth
import Digest
import McuMgr
import Profile

/// Answers the profile's SMP characteristic (``FirmwareDefinition``) as an MCUboot device's mcumgr does: each
/// central's writes are put back together into SMP packets (``SMPReassembler``, bounded by the buffer size the
/// device reports), answered by the ``FirmwareTarget``, and the answer notified to that central alone (cut at its MTU
/// by the delivery). A reset answered is followed by a reboot (``Emulator/rebootFirmware()``): the centrals
/// are dropped, the device is gone for the boot time, and comes back running what MCUboot booted.
final class FirmwareResponder: GattResponder {
    let definition: FirmwareDefinition
    private(set) var target: FirmwareTarget
    /// The packet each central is in the middle of (only centrals with one begun; at most
    /// ``maximumReassemblers``, each bounded by the buffer size).
    private var reassemblers: [CentralID: SMPReassembler] = [:]
    static let maximumReassemblers = 64
    /// A reboot under way: requests meanwhile are not answered (the device is resetting).
    private(set) var rebooting = false
    /// The central whose upload is under way: another central's upload chunks are answered busy (`rc 10`) instead of
    /// restarting it. Cleared when the upload ends or that central leaves (the upload stays, to be resumed).
    private(set) var uploader: CentralID?
    /// Centrals a `disconnect` fault is dropping: the device has let them go, so what they still write before bluetoothd
    /// takes the link down (seconds on a loaded machine) is not carried out.
    private var leaving: Set<CentralID> = []

    init(_ definition: FirmwareDefinition) {
        self.definition = definition
        var configuration = FirmwareTarget.Configuration()
        configuration.bufferSize = definition.bufferSize
        configuration.bufferCount = definition.bufferCount
        configuration.slotSize = definition.slotSize
        // The running image's hash: the profile gives a version only, so a digest of it stands in (the same every run).
        let running = FirmwareTarget.Image(
            version: definition.version, hash: SHA256.hash(Array("gattemu image \(definition.version)".utf8)))
        target = FirmwareTarget(running: running, configuration: configuration)
    }

    func read(_ operation: ReadOperation, in runtime: isolated Emulator) async throws(ATTError) -> [UInt8] {
        throw runtime.answer(.notPermitted, operation.central, operation.attribute)
    }

    func write(_ operation: WriteOperation, in runtime: isolated Emulator) async throws(ATTError) {
        guard operation.attribute.descriptor == nil, !rebooting, !leaving.contains(operation.central) else { return }
        let central = operation.central
        var reassembler = reassemblers[central] ?? SMPReassembler(capacity: definition.bufferSize)
        let pieces = reassembler.take(operation.value)
        if reassembler.isIdle {
            reassemblers[central] = nil
        } else {
            if reassemblers[central] == nil, reassemblers.count >= Self.maximumReassemblers, let evicted = reassemblers.keys.first {
                // More centrals mid-packet than any real rig has: one's partial packet goes, and the log says so.
                reassemblers[evicted] = nil
                runtime.log.record(
                    .firmware, central: evicted.logged, characteristic: definition.characteristic,
                    detail: "smp: a partial packet dropped (\(Self.maximumReassemblers) centrals in the middle of one)")
            }
            reassemblers[central] = reassembler
        }
        for piece in pieces {
            switch piece {
            case .packet(let packet):
                let header = packet.header
                if header.group == SMPGroup.image, header.command == 1, let owner = uploader, owner != central, target.uploadProgress != nil
                {
                    runtime.log.record(
                        .firmware, central: central.logged, characteristic: definition.characteristic,
                        detail: "smp: image upload seq \(header.sequence): another central's upload is under way (rc 10)")
                    await send(
                        SMPPacket(answering: header, error: .busy), to: central, in: runtime)
                    continue
                }
                let plan = await faults(on: packet, from: central, in: runtime)
                if plan.drop {
                    runtime.log.record(
                        .firmware, central: central.logged, characteristic: definition.characteristic,
                        detail: "smp: \(Self.name(header)) seq \(header.sequence): not carried out, not answered (fault)")
                    continue
                }
                if let code = plan.smpError {
                    let error = SMPGroupError(group: header.group, rc: code)
                    runtime.log.record(
                        .firmware, central: central.logged, characteristic: definition.characteristic,
                        detail:
                            "smp: \(Self.name(header)) seq \(header.sequence): refused (\(FirmwareTarget.code(of: error, for: header)), a fault)"
                    )
                    await send(SMPPacket(answering: header, error: error), to: central, in: runtime)
                    if plan.disconnect {
                        letGo(central, in: runtime)
                        return
                    }
                    continue
                }
                let outcome = target.handle(packet)
                if outcome.events.contains(where: { if case .uploadFinished = $0 { true } else { false } }) {
                    uploader = nil
                } else if header.group == SMPGroup.image, header.command == 1, target.uploadProgress != nil {
                    uploader = central
                }
                let progress = outcome.events.lazy.compactMap { event -> EmulatorEvent.Progress? in
                    guard case .uploadProgress(let done, let total) = event else { return nil }
                    return EmulatorEvent.Progress(done: done, total: total)
                }.last
                runtime.log.record(
                    .firmware, central: central.logged, characteristic: definition.characteristic, detail: "smp: " + outcome.summary,
                    progress: progress)
                if let answer = outcome.answer { await send(answer, to: central, in: runtime) }
                for event in outcome.events { await apply(event, in: runtime) }
                if plan.disconnect {
                    letGo(central, in: runtime)
                    return
                }
            case .tooLong(let header):
                runtime.log.record(
                    .firmware, central: central.logged, characteristic: definition.characteristic,
                    detail:
                        "smp: a packet of \(Int(header.length) + SMPHeader.size) bytes, over the buffer of \(definition.bufferSize) (rc 7)")
                let answer = SMPPacket(answering: header, error: .messageTooLong)
                await send(answer, to: central, in: runtime)
            case .garbage(let count):
                runtime.log.record(
                    .firmware, central: central.logged, characteristic: definition.characteristic,
                    detail: "smp: \(count) bytes that begin no SMP packet, dropped")
            }
        }
    }

    /// The faults on an upload chunk, a confirm or a reset (`on: upload`, `confirm`, `reset`): logged, the delay
    /// waited, a wrong hash or a lost pending image done to the target; dropping, refusing and disconnecting are the
    /// caller's.
    private func faults(on packet: SMPPacket, from central: CentralID, in runtime: isolated Emulator) async -> FaultPlan {
        // Telling an upload chunk's share decodes its body a second time: only when a fault may want it.
        guard runtime.faultState.engine.faults.contains(where: { $0.spec.on.isAboutFirmware }),
            let point = target.faultPoint(of: packet)
        else { return FaultPlan() }
        let operation =
            switch point {
            case .upload(let percent): FaultOperation(.upload, centrals: [central.address], percent: percent)
            case .confirm: FaultOperation(.confirm, centrals: [central.address])
            case .reset: FaultOperation(.reset, centrals: [central.address])
            }
        let plan = runtime.faultState.engine.plan(for: operation)
        guard !plan.isEmpty else { return plan }
        runtime.record(plan, central: central.address, characteristic: definition.characteristic)
        if plan.delayMilliseconds > 0 { try? await Task.sleep(for: .milliseconds(plan.delayMilliseconds)) }
        if plan.wrongHash, !plan.drop, plan.smpError == nil { target.keepNextImageWithWrongHash() }
        if plan.losePending, !plan.drop, plan.smpError == nil, target.losePendingImage() {
            runtime.log.record(.firmware, detail: "firmware: the image pending in slot 1 is lost (a fault)")
        }
        return plan
    }

    /// A `disconnect` fault fired on `central`'s request: answered, then nothing more of it is taken, and the link is
    /// dropped.
    private func letGo(_ central: CentralID, in runtime: isolated Emulator) {
        leaving.insert(central)
        reassemblers[central] = nil
        runtime.scheduleDisconnect([central.address])
    }

    static func name(_ header: SMPHeader) -> String { FirmwareTarget.name(group: header.group, command: header.command) }

    /// Notifies `packet` to `central` in pieces of at most its ATT MTU − 5 bytes: the client joins them by the header's
    /// length (Zephyr cuts at MTU − 3). bluetoothd sends notifications to a central that takes several per PDU (a BlueZ
    /// central: smpmgr and smpclient on Linux) as Multiple Handle Value Notifications, whose values are at most
    /// MTU − 5 bytes, and cuts a longer one short without a word (BlueZ 5.66 to 5.84, `src/shared/gatt-server.c`,
    /// `bt_gatt_server_send_notification`): an answer cut at MTU − 3 would reach such a client two bytes short.
    private func send(_ packet: SMPPacket, to central: CentralID, in runtime: isolated Emulator) async {
        let bytes = packet.bytes
        let size = max(1, (runtime.centrals.mtu(of: central.address) ?? ATTMTU.minimum).multipleNotificationPayload)
        for start in stride(from: 0, to: bytes.count, by: size) {
            await runtime.sendNotification(
                definition.characteristic, value: Array(bytes[start..<min(start + size, bytes.count)]), target: .central(central),
                indicate: false)
        }
    }

    private func apply(_ event: FirmwareTarget.Event, in runtime: isolated Emulator) async {
        switch event {
        case .resetRequested:
            guard !rebooting else { return }
            rebooting = true
            Task(executorPreference: runtime.loop) { [weak runtime] in await runtime?.rebootFirmware() }
        case .uploadFinished(let image, let problem, _):
            let what = image.map { "slot 1 holds \($0.version)" } ?? "no bootable image (\(problem ?? "unknown"))"
            runtime.log.record(.firmware, characteristic: definition.characteristic, detail: "firmware: upload complete, \(what)")
        case .marked(_, let permanent):
            runtime.log.record(.firmware, detail: "firmware: slot 1 marked \(permanent ? "permanent" : "for test")")
        case .confirmed:
            runtime.log.record(.firmware, detail: "firmware: \(target.primary.version) confirmed")
        case .uploadStarted, .uploadProgress, .uploadResumed, .erased:
            break  // in the request's own line
        }
    }

    /// What `GET /v1/firmware` shows: the slots as a state read answers them, the upload under way.
    var snapshot: FirmwareSnapshot {
        FirmwareSnapshot(
            slots: target.slots.map {
                FirmwareSnapshot.Slot(
                    slot: $0.slot, version: $0.image.version.description, hash: $0.image.hash, bootable: $0.image.bootable,
                    pending: $0.pending, confirmed: $0.confirmed, active: $0.active, permanent: $0.permanent,
                    size: $0.image.size > 0 ? $0.image.size : nil)
            },
            upload: target.uploadProgress.map { FirmwareSnapshot.Upload(offset: $0.offset, length: $0.length, central: uploader?.address) },
            rebooting: rebooting, bufferSize: definition.bufferSize, bufferCount: definition.bufferCount, slotSize: definition.slotSize)
    }

    /// MCUboot at the reset: swap, revert or nothing; the reboot is over.
    func boot() -> FirmwareTarget.Boot {
        defer { rebooting = false }
        reassemblers = [:]
        uploader = nil
        return target.boot()
    }

    func subscription(_ operation: SubscriptionOperation, in runtime: isolated Emulator) async {}

    func link(_ event: LinkEvent, in runtime: isolated Emulator) async {
        guard case .disconnected(let central) = event else { return }
        reassemblers[central] = nil
        leaving.remove(central)
        if uploader == central { uploader = nil }
    }
}
