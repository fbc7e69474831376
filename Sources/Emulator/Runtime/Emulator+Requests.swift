import BlueZ
import Bluetooth
import Profile

extension Emulator: GattRequestHandler {
    public func read(_ request: GattReadRequest) async throws(ATTError) -> [UInt8] {
        let central = centralID(request.context)
        noteMTU(request.context, central)
        let id = request.attribute
        recordOperation(
            .read, central: central.address, characteristic: id.description, detail: request.offset > 0 ? "offset \(request.offset)" : nil)
        request.context.begin()
        if let upstream = relayState.upstream {
            // A relay: the device answers, the faults act on both sides of it.
            let faults = try await applyFaults(.read, id, central)
            let bytes = mutated(
                try await relayRead(upstream, id, offset: request.offset, central: central), by: faults, central: central.address,
                characteristic: id.description)
            recordOperation(.answer, central: central.address, characteristic: id.description, value: bytes)
            return bytes
        }
        if let descriptor = id.descriptor {
            // Descriptors are served from their declared value.
            let value = descriptorValue(characteristic: id.characteristic, descriptor: descriptor)
            guard (0...value.count).contains(request.offset) else { throw answer(.invalidOffset, central, id) }
            let bytes = Array(value.dropFirst(request.offset))
            recordOperation(.answer, central: central.address, characteristic: id.description, value: bytes)
            return bytes
        }
        let faults = try await applyFaults(.read, id, central)
        let outcome = engine.handle(.read(characteristic: id.characteristic, central: central, offset: request.offset))
        let reply = try await run(outcome, central: central)
        switch reply {
        case .value(let bytes)?:
            let answer = mutated(bytes, by: faults, central: central.address, characteristic: id.description)
            recordOperation(.answer, central: central.address, characteristic: id.description, value: answer)
            return answer
        case .error(let error)?:
            throw answer(error, central, id)
        case .success?, nil:
            let stored = engine.value(of: id.characteristic)
            guard (0...stored.count).contains(request.offset) else { throw answer(.invalidOffset, central, id) }
            let bytes = mutated(
                Array(stored.dropFirst(request.offset)), by: faults, central: central.address, characteristic: id.description)
            recordOperation(.answer, central: central.address, characteristic: id.description, value: bytes)
            return bytes
        }
    }

    public func write(_ request: GattWriteRequest) async throws(ATTError) {
        let central = centralID(request.context)
        noteMTU(request.context, central)
        let id = request.attribute
        recordOperation(
            .write, central: central.address, characteristic: id.description, value: request.value,
            detail: (request.kind?.rawValue ?? "write") + (request.bluetoothdAnswered ? " (acknowledged by bluetoothd)" : "")
                + (request.offset > 0 ? " offset \(request.offset)" : ""))
        request.context.begin()
        if request.prepareAuthorize { return }
        if let upstream = relayState.upstream {
            try await relay(request, to: upstream, central: central)
            return
        }
        guard id.descriptor == nil else { return }
        let faults: FaultPlan
        do {
            faults = try await applyFaults(.write, id, central, answerable: !request.bluetoothdAnswered)
        } catch {
            if request.bluetoothdAnswered { return }
            throw error
        }
        var value = mutatedWrite(request.value, by: faults, central: central.address, characteristic: id.description)
        if request.offset > 0 {
            // A long write arrives in pieces at increasing offsets: assemble on the stored value.
            var stored = engine.value(of: id.characteristic)
            guard (0...stored.count).contains(request.offset) else { throw answer(.invalidOffset, central, id) }
            stored.replaceSubrange(request.offset..<min(stored.count, request.offset + value.count), with: value)
            value = stored
        }
        let outcome = engine.handle(
            .write(characteristic: id.characteristic, central: central, value: value, withResponse: request.kind != .command))
        let reply = try await run(outcome, central: central)
        if case .error(let error)? = reply {
            if request.bluetoothdAnswered {
                log.record(
                    .note, central: central.address, characteristic: id.description,
                    detail: "error \(error) not delivered: bluetoothd already acknowledged this write")
                return
            }
            throw answer(error, central, id)
        }
        if !request.bluetoothdAnswered {
            recordOperation(.answer, central: central.address, characteristic: id.description, detail: "success")
        }
    }

    /// A write forwarded to the relay's device after the faults acted on it; a write bluetoothd already
    /// acknowledged goes as a Write Command and its errors stay in the log.
    private func relay(_ request: GattWriteRequest, to upstream: any RelayUpstream, central: CentralID) async throws(ATTError) {
        let id = request.attribute
        do {
            let faults = try await applyFaults(.write, id, central, answerable: !request.bluetoothdAnswered)
            let value = mutatedWrite(request.value, by: faults, central: central.address, characteristic: id.description)
            try await relayWrite(
                upstream, id, value: value, offset: request.offset,
                withResponse: request.kind != .command && !request.bluetoothdAnswered, central: central)
        } catch {
            if request.bluetoothdAnswered { return }
            throw answer(error, central, id)
        }
        if !request.bluetoothdAnswered {
            recordOperation(.answer, central: central.address, characteristic: id.description, detail: "success")
        }
    }

    public func subscriptionChanged(_ change: GattSubscriptionChange) async {
        let central = centralID(change.context)
        let subscribed = change.kind == .started || change.kind == .acquired
        if subscribed { noteMTU(change.context, central) }
        recordOperation(
            subscribed ? .subscribed : .unsubscribed, central: central.address, characteristic: change.characteristic,
            detail: change.kind == .acquired || change.kind == .released ? "AcquireNotify" : "StartNotify")
        change.context.begin()
        if let upstream = relayState.upstream {
            await relaySubscription(upstream, change.characteristic, central: central.address, subscribed: subscribed)
        }
        let event: EngineEvent =
            subscribed
            ? .subscribe(characteristic: change.characteristic, central: central)
            : .unsubscribe(characteristic: change.characteristic, central: central)
        _ = try? await run(engine.handle(event), central: central)
    }

    public func indicationConfirmed(characteristic: String) async {
        log.record(.confirmed, characteristic: characteristic)
    }

    /// Logs the ATT error about to be returned and hands it back for throwing.
    func answer(_ error: ATTError, _ central: CentralID, _ id: GattAttributeID) -> ATTError {
        recordOperation(.answer, central: central.address, characteristic: id.description, detail: "error \(error)")
        return error
    }

    func descriptorValue(characteristic: String, descriptor: String) -> [UInt8] {
        guard let definition = profile.characteristic(characteristic)?.descriptors.first(where: { $0.id == descriptor }) else { return [] }
        return profile.descriptorValue(definition, environment: engine.environment)
    }

    /// Logs a GATT operation of `central` with the ATT MTU of its link (when bluetoothd has told it).
    func recordOperation(
        _ kind: EmulatorEvent.Kind, central: BluetoothAddress?, characteristic: String, value: [UInt8]? = nil, detail: String? = nil
    ) {
        log.record(
            kind, central: central, characteristic: characteristic, value: value, detail: detail,
            mtu: central.flatMap { faultState.mtus[$0] }.map { Int($0.rawValue) })
    }

    /// Logs a central's ATT MTU the first time a request reveals it and whenever it changes (BlueZ tells
    /// the MTU only in request options), and keeps it for the status.
    func noteMTU(_ context: GattRequestContext, _ central: CentralID) {
        guard let mtu = context.mtu, faultState.mtus[central.address] != mtu else { return }
        faultState.mtus[central.address] = mtu
        log.record(.mtu, central: central.address, detail: mtu.description)
    }

    /// The central a request came from: BlueZ's `device` option, else ``latestCentral``.
    func centralID(_ context: GattRequestContext) -> CentralID {
        if let address = context.central { return CentralID(address: address) }
        return latestCentral
    }

    /// The central that connected last, for events no central caused (timers, triggers, control);
    /// all zeros while none is connected.
    var latestCentral: CentralID {
        CentralID(address: connectedCentrals.last ?? CentralID.nobody)
    }

    func centralEvent(_ event: CentralEvent) async {
        switch event {
        case .connected(let address):
            connectedCentrals.removeAll { $0 == address }
            connectedCentrals.append(address)
            log.record(.connected, central: address)
            applyConnectFaults(address)
            await relayState.upstream?.central(address, connected: true)
            _ = try? await run(engine.handle(.connect(CentralID(address: address))), central: CentralID(address: address))
        case .disconnected(let address):
            connectedCentrals.removeAll { $0 == address }
            faultState.mtus[address] = nil
            log.record(.disconnected, central: address)
            pairingEnded(with: address)
            for (characteristic, subscribers) in relayState.subscribers where subscribers.contains(address) {
                if let upstream = relayState.upstream {
                    await relaySubscription(upstream, characteristic, central: address, subscribed: false)
                }
            }
            await relayState.upstream?.central(address, connected: false)
            _ = try? await run(engine.handle(.disconnect(CentralID(address: address))), central: CentralID(address: address))
        case .paired(let address):
            log.record(.paired, central: address)
            pairingEnded(with: address)
        }
    }

    /// Fires a named trigger, as the control API will.
    public func fire(trigger name: String, arguments: [String: String] = [:]) async {
        log.record(.note, detail: "trigger \(name)")
        _ = try? await run(engine.handle(.trigger(name, arguments: arguments)), central: latestCentral)
    }
}

extension CentralID {
    /// The address ``Emulator/latestCentral`` stands in with while no central is connected.
    static let nobody = BluetoothAddress.zero

    /// The address as the event log names it: nil for the stand-in (a trigger or timer fired with nobody
    /// connected), so that no made-up central appears in the log, the dashboard or a report.
    var logged: BluetoothAddress? { address == Self.nobody ? nil : address }
}
