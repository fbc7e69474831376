import BlueZ
import Bluetooth
import Profile

extension Emulator: GattRequestHandler {
    public func read(_ request: GattReadRequest) async throws(ATTError) -> [UInt8] {
        let central = centralID(request.context)
        noteMTU(request.context, central)
        let id = request.attribute
        recordOperation(
            .read, central: central.address, attribute: id, detail: request.offset > 0 ? "offset \(request.offset)" : nil)
        request.context.begin()
        let bytes = try await pipeline.inbound.read(ReadOperation(attribute: id, offset: request.offset, central: central), in: self)
        recordOperation(.answer, central: central.address, attribute: id, value: bytes)
        return bytes
    }

    public func write(_ request: GattWriteRequest) async throws(ATTError) {
        let central = centralID(request.context)
        noteMTU(request.context, central)
        let id = request.attribute
        recordOperation(
            .write, central: central.address, attribute: id, value: request.value,
            detail: (request.kind?.rawValue ?? "write") + (request.bluetoothdAnswered ? " (acknowledged by bluetoothd)" : "")
                + (request.offset > 0 ? " offset \(request.offset)" : ""))
        request.context.begin()
        if request.prepareAuthorize { return }
        let operation = WriteOperation(
            attribute: id, value: request.value, offset: request.offset, command: request.kind == .command,
            acknowledged: request.bluetoothdAnswered, central: central)
        do {
            try await pipeline.inbound.write(operation, in: self)
        } catch {
            // What bluetoothd acknowledged cannot fail for the central: the pipeline logged why it did here.
            if request.bluetoothdAnswered { return }
            throw error
        }
        if !request.bluetoothdAnswered {
            recordOperation(.answer, central: central.address, attribute: id, detail: "success")
        }
    }

    public func subscriptionChanged(_ change: GattSubscriptionChange) async {
        let central = centralID(change.context)
        let subscribed = change.kind == .started || change.kind == .acquired
        if subscribed { noteMTU(change.context, central) }
        recordOperation(
            subscribed ? .subscribed : .unsubscribed, central: central.address,
            attribute: GattAttributeID(characteristic: change.characteristic),
            detail: change.kind == .acquired || change.kind == .released ? "AcquireNotify" : "StartNotify")
        centrals.note(subscribed: subscribed, to: change.characteristic, by: central.address)
        change.context.begin()
        await pipeline.inbound.subscription(
            SubscriptionOperation(characteristic: change.characteristic, central: central, subscribed: subscribed), in: self)
    }

    public func indicationConfirmed(characteristic: CharacteristicID) async {
        log.record(.confirmed, characteristic: characteristic)
    }

    /// Logs the ATT error about to be returned and hands it back for throwing.
    func answer(_ error: ATTError, _ central: CentralID, _ id: GattAttributeID) -> ATTError {
        recordOperation(.answer, central: central.address, attribute: id, detail: "error \(error)")
        return error
    }

    func descriptorValue(characteristic: CharacteristicID, descriptor: String) -> [UInt8] {
        guard let definition = profile.characteristic(characteristic)?.descriptors.first(where: { $0.id == descriptor }) else { return [] }
        return profile.descriptorValue(definition, environment: engine.environment)
    }

    /// Logs a GATT operation of `central` with the ATT MTU of its link (when bluetoothd has told it).
    func recordOperation(
        _ kind: EmulatorEvent.Kind, central: BluetoothAddress?, attribute: GattAttributeID, value: [UInt8]? = nil, detail: String? = nil
    ) {
        log.record(
            kind, central: central, characteristic: attribute.characteristic, descriptor: attribute.descriptor, value: value,
            detail: detail,
            mtu: central.flatMap { centrals.mtu(of: $0) }.map { Int($0.rawValue) })
    }

    /// Logs a central's ATT MTU the first time a request reveals it and whenever it changes (BlueZ tells
    /// the MTU only in request options), and keeps it for the status.
    func noteMTU(_ context: GattRequestContext, _ central: CentralID) {
        guard let mtu = context.mtu, centrals.note(mtu: mtu, of: central.address) else { return }
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
        CentralID(address: centrals.latest ?? CentralID.nobody)
    }

    func centralEvent(_ event: CentralEvent) async {
        switch event {
        case .connected(let address):
            centrals.connect(address)
            log.record(.connected, central: address)
            await pipeline.inbound.link(.connected(CentralID(address: address)), in: self)
        case .disconnected(let address):
            centrals.disconnect(address)
            log.record(.disconnected, central: address)
            pairingEnded(with: address)
            await pipeline.inbound.link(.disconnected(CentralID(address: address)), in: self)
        case .paired(let address):
            log.record(.paired, central: address)
            pairingEnded(with: address)
        }
    }

    /// The pipeline for `responder`: the faults around it on the way in, and around the delivery on the way out.
    static func pipeline(
        answeredBy responder: any GattResponder, delivery: any NotificationSender = NotificationDelivery()
    ) -> GattPipeline {
        GattPipeline(stages: [FaultStage()], responder: responder, delivery: delivery)
    }

    /// Makes `responder` answer centrals, behind the same stages (before ``start()``).
    func answer(with responder: any GattResponder, delivery: any NotificationSender = NotificationDelivery()) {
        pipeline = Self.pipeline(answeredBy: responder, delivery: delivery)
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
