import Bluetooth
import ControlBodies
import ControlContract
import Emulator
import FoundationEssentials
import Hummingbird
import Lexical
import Profile

/// The routes of ``ControlContract/operations`` for ``ControlDevices``: each operation at its own path (the one
/// device's, or in a rig the process's: the event log and stream, the device list, the dashboard) and, for each
/// operation about a device, under `/v1/devices/{device}` with the handlers of that device's ``ControlRoutes``.
struct ControlRouting: Sendable {
    let devices: ControlDevices
    let streams: EventStreamSlots
    let heartbeat: Duration
    let streamLifetime: Duration?

    /// The handlers of one device (its events only, in a rig); of the whole process for `device` nil.
    func routes(of device: ControlDevices.Device?) -> ControlRoutes {
        ControlRoutes(
            target: (device ?? devices.devices[0]).target, device: devices.single == nil ? device?.id : nil, streams: streams,
            heartbeat: heartbeat, streamLifetime: streamLifetime)
    }

    func register(on router: Router<BasicRequestContext>) {
        let each = Dictionary(uniqueKeysWithValues: devices.devices.map { ($0.id, routes(of: $0).handlers) })
        let whole = routes(of: devices.single).handlers
        let devices = self.devices
        for operation in ControlContract.processOperations {
            guard let handler = whole[operation.id] else { continue }  // ControlContractTests: none is missing
            if !operation.deviceScoped || devices.single != nil || ControlContract.rigWide.contains(operation.id) {
                router.on(RouterPath(operation.path), method: operation.method.http, use: handler)
            } else {
                let ids = devices.devices.map(\.id)
                router.on(RouterPath(operation.path), method: operation.method.http) { _, _ -> Response in
                    throw ControlError(
                        .conflict, "this gattemu runs \(ids.count) devices: ask one under /v1/devices/{device}/ (GET /v1/devices)"
                    ) { $0.known = ids }
                }
            }
            guard operation.deviceScoped else { continue }
            let id = operation.id
            router.on(RouterPath(operation.ofDevice.path), method: operation.method.http) { request, context in
                let name = try context.parameter("device")
                guard let handler = each[name]?[id] else {
                    throw ControlError.notFound("no device \"\(name.prefix(80))\"") { $0.known = devices.devices.map(\.id) }
                }
                return try await handler(request, context)
            }
        }
        router.on(RouterPath(ControlContract.listDevices.path), method: .get) { _, _ in JSONResponse.make(await devices.list()) }
    }
}

extension Operation.Method {
    var http: HTTPRequest.Method {
        switch self {
        case .get: .get
        case .post: .post
        case .put: .put
        case .delete: .delete
        }
    }
}

/// The handlers of ``ControlContract/processOperations`` for one ``ControlTarget``, each answering the operation
/// of its id. Every handler answers JSON encoded from the contract's types (or a dashboard file); problems are
/// thrown as ``ControlError``.
struct ControlRoutes: Sendable {
    typealias Handler = @Sendable (Request, BasicRequestContext) async throws -> Response

    let target: any ControlTarget
    /// The rig's device whose events the event routes show; nil: every event of the log.
    var device: String? = nil
    let streams: EventStreamSlots
    let heartbeat: Duration
    let streamLifetime: Duration?

    /// The handler of each operation id.
    var handlers: [String: Handler] {
        [
            "getStatus": { _, _ in JSONResponse.make(Status(await target.status())) },
            "getEvents": { request, _ in try events(request) },
            "streamEvents": { request, _ in try stream(request) },
            "notify": { request, context in try await notify(request, context, indicate: false) },
            "indicate": { request, context in try await notify(request, context, indicate: true) },
            "setValue": { request, context in try await setValue(request, context) },
            "fireTrigger": { request, context in try await trigger(request, context) },
            "setVariable": { request, context in try await setVariable(request, context) },
            "listFaults": { _, _ in JSONResponse.make(FaultList(faults: await target.faults().map(Fault.init))) },
            "addFaults": { request, _ in try await addFaults(request) },
            "clearFaults": { _, _ in JSONResponse.make(FaultsCleared(removed: await target.clearFaults())) },
            "removeFault": { _, context in try await removeFault(context) },
            "disconnectCentral": { _, context in try await disconnect(context) },
            "setAdvertisement": { request, _ in try await advertisement(request) },
            "setService": { request, context in try await setService(request, context) },
            "changeAddress": { request, _ in try await changeAddress(request) },
            "getPairing": { _, _ in JSONResponse.make(PairingStatus(await target.pairingStatus())) },
            "answerPairing": { request, _ in try await answerPairing(request) },
            "listBonds": { _, _ in try await listBonds() },
            "forgetBond": { _, context in try await forgetBond(context) },
            "reset": { _, _ in
                await target.reset()
                return JSONResponse.make(OkResult())
            },
            "relaySnapshot": { _, _ in try await relaySnapshot() },
            "getFirmware": { _, _ in try await firmware() },
            "listChannels": { _, _ in
                JSONResponse.make(ChannelList(channels: await target.channelSnapshots().map(ChannelList.Channel.init)))
            },
            "sendSDU": { request, context in try await sendSDU(request, context) },
            "openapi": { _, _ in OpenAPIDocument.response() },
            "dashboard": { _, _ in DashboardAssets.response(.page) },
            "dashboardStyle": { _, _ in DashboardAssets.response(.style) },
            "dashboardScript": { _, _ in DashboardAssets.response(.script) },
            "timelineScript": { _, _ in DashboardAssets.response(.timeline) },
        ]
    }

    // MARK: Events

    func events(_ request: Request) throws(ControlError) -> Response {
        let since = try integer(request, "since", minimum: 0) ?? 0
        let limit = try integer(request, "limit", minimum: 1) ?? 1000
        var events = target.events.events(since: since, limit: device == nil ? limit : nil)
        if let device { events = Array(events.lazy.filter { $0.device == device }.prefix(limit)) }
        return JSONResponse.make(
            EventPage(events: events.map(Event.init), last: events.last?.sequence ?? since, latest: target.events.lastSequence))
    }

    /// Server-Sent Events (``EventStream``); resumes after `since` or `Last-Event-ID`; 503 past the stream limit.
    func stream(_ request: Request) throws(ControlError) -> Response {
        var lastID: Int?
        if let header = request.headers.first(where: { $0.name.canonicalName == "last-event-id" })?.value {
            guard header.utf8.count <= 18, header.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let id = Int(header) else {
                throw ControlError.badRequest("Last-Event-ID: expected a sequence number, got \"\(header.prefix(40))\"")
            }
            lastID = id
        }
        let since = try integer(request, "since", minimum: 0) ?? lastID
        guard let slot = streams.take() else {
            throw ControlError(.serviceUnavailable, "too many event-stream clients (\(streams.maximum))") { $0.limit = streams.maximum }
        }
        let body = EventStream.body(
            target.events.subscribe(since: since), device: device, heartbeat: heartbeat, lifetime: streamLifetime, slot: slot)
        return Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"], body: body)
    }

    // MARK: Characteristics

    /// The bytes of a value body (`{"hex": …}`, `{"utf8": …}`, `{"base64": …}`): notify, set value, send an SDU.
    func valueBody(_ request: Request) async throws(ControlError) -> [UInt8] {
        var request = request
        guard let node = try await request.jsonObject() else { throw .badRequest("missing JSON body") }
        return try Bodies.decoding { () throws(BodyError) in try ControlBody.value(node) }
    }

    func notify(_ request: Request, _ context: BasicRequestContext, indicate: Bool) async throws(ControlError) -> Response {
        let id = try context.parameter("id")
        let value = try await valueBody(request)
        do {
            try await target.notify(characteristic: CharacteristicID(id), value: value, indicate: indicate)
        } catch {
            throw ControlError(error)
        }
        return JSONResponse.make(ValueResult(characteristic: id, hex: value.hexString(uppercase: false)))
    }

    func setValue(_ request: Request, _ context: BasicRequestContext) async throws(ControlError) -> Response {
        let id = try context.parameter("id")
        let value = try await valueBody(request)
        do {
            try await target.setValue(characteristic: CharacteristicID(id), value: value)
        } catch {
            throw ControlError(error)
        }
        return JSONResponse.make(ValueResult(characteristic: id, hex: value.hexString(uppercase: false)))
    }

    // MARK: Triggers, variables, centrals, advertising

    func trigger(_ request: Request, _ context: BasicRequestContext) async throws(ControlError) -> Response {
        var request = request
        let name = try context.parameter("name")
        let body = try await request.jsonObject(required: false)
        let arguments = try Bodies.decoding { () throws(BodyError) in try ControlBody.arguments(body) }
        do {
            try await target.fireTrigger(name, arguments: arguments)
        } catch {
            throw ControlError(error)
        }
        return JSONResponse.make(TriggerResult(trigger: name))
    }

    func setVariable(_ request: Request, _ context: BasicRequestContext) async throws(ControlError) -> Response {
        var request = request
        let name = try context.parameter("name")
        guard let node = try await request.jsonObject() else { throw .badRequest("missing JSON body") }
        let value = try Bodies.decoding { () throws(BodyError) in try ControlBody.variable(node) }
        do {
            let shown = try await target.setVariable(name, to: VariableValue(value))
            return JSONResponse.make(VariableResult(name: name, value: shown))
        } catch {
            throw ControlError(error)
        }
    }

    /// The `{address}` of a central's route, checked and in upper case; 400 otherwise.
    func centralAddress(_ context: BasicRequestContext) throws(ControlError) -> BluetoothAddress {
        let given = try context.parameter("address")
        guard StrictParse.isAddress(given), let address = BluetoothAddress(given) else {
            throw .badRequest("bad central address \"\(given.prefix(40))\": expected AA:BB:CC:DD:EE:FF")
        }
        return address
    }

    func disconnect(_ context: BasicRequestContext) async throws(ControlError) -> Response {
        let address = try centralAddress(context)
        do {
            try await target.disconnect(central: address)
        } catch {
            throw ControlError(error)
        }
        return JSONResponse.make(DisconnectResult(central: address.description))
    }

    func advertisement(_ request: Request) async throws(ControlError) -> Response {
        var request = request
        guard let node = try await request.jsonObject() else { throw .badRequest("missing JSON body") }
        let variant = try Bodies.decoding { () throws(BodyError) in try ControlBody.variant(node) }
        do {
            try await target.setAdvertisement(variant: variant)
        } catch {
            throw ControlError(error)
        }
        return JSONResponse.make(AdvertisementResult(variant: variant))
    }

    // MARK: Services, pairing and bonds

    func setService(_ request: Request, _ context: BasicRequestContext) async throws(ControlError) -> Response {
        var request = request
        let id = try context.parameter("id")
        guard let node = try await request.jsonObject() else { throw .badRequest("missing JSON body") }
        let present = try Bodies.decoding { () throws(BodyError) in try ControlBody.servicePresence(node) }
        do {
            let changed = try await target.setService(id, present: present)
            return JSONResponse.make(ServiceResult(service: id, present: present, changed: changed))
        } catch {
            throw ControlError(error)
        }
    }

    func changeAddress(_ request: Request) async throws(ControlError) -> Response {
        var request = request
        guard let node = try await request.jsonObject() else { throw .badRequest("missing JSON body") }
        let wanted = try Bodies.decoding { () throws(BodyError) in try ControlBody.addressRequest(node) }
        do {
            return JSONResponse.make(AddressChanged(try await target.changeAddress(AddressChoice(wanted))))
        } catch {
            throw ControlError(error)
        }
    }

    func answerPairing(_ request: Request) async throws(ControlError) -> Response {
        var request = request
        guard let node = try await request.jsonObject() else { throw .badRequest("missing JSON body") }
        let answer = try Bodies.decoding { () throws(BodyError) in try ControlBody.pairingAnswer(node) }
        do {
            return JSONResponse.make(PairingAnswered(try await target.answerPairing(prompt: answer.prompt, PromptReply(answer.reply))))
        } catch {
            throw ControlError(error)
        }
    }

    func sendSDU(_ request: Request, _ context: BasicRequestContext) async throws(ControlError) -> Response {
        let id = try context.parameter("id")
        let value = try await valueBody(request)
        do {
            let count = try await target.sendSDU(channel: id, value: value)
            return JSONResponse.make(ChannelSent(channel: id, hex: value.hexString(uppercase: false), channels: count))
        } catch {
            throw ControlError(error)
        }
    }

    func relaySnapshot() async throws(ControlError) -> Response {
        do {
            return JSONResponse.make(RelaySnapshotResult(try await target.relaySnapshot()))
        } catch {
            throw ControlError(error)
        }
    }

    func firmware() async throws(ControlError) -> Response {
        do {
            return JSONResponse.make(FirmwareStatus(try await target.firmwareStatus()))
        } catch {
            throw ControlError(error)
        }
    }

    func listBonds() async throws(ControlError) -> Response {
        do {
            return JSONResponse.make(BondList(bonds: try await target.bonds().map(Bond.init)))
        } catch {
            throw ControlError(error)
        }
    }

    func forgetBond(_ context: BasicRequestContext) async throws(ControlError) -> Response {
        let address = try centralAddress(context)
        do {
            try await target.forgetBond(address)
        } catch {
            throw ControlError(error)
        }
        return JSONResponse.make(BondForgotten(central: address.description))
    }

    // MARK: Faults

    /// One spec, an array of specs, or `{"faults": [...]}`; all or nothing.
    func addFaults(_ request: Request) async throws(ControlError) -> Response {
        var request = request
        guard let node = try await request.jsonBody() else { throw .badRequest("missing JSON body") }
        let specs: [FaultSpec]
        let single: Bool
        do {
            (specs, single) = try ControlBody.faults(node)
        } catch {
            throw ControlError(error)
        }
        var added: [Fault] = []
        for spec in specs {
            do {
                added.append(Fault(try await target.addFault(spec)))
            } catch {
                for fault in added { _ = await target.removeFault(id: fault.id) }
                throw ControlError(error)
            }
        }
        let body: FaultsAdded = single && added.count == 1 ? .one(added[0]) : .several(FaultList(faults: added))
        return JSONResponse.make(body, status: .created)
    }

    func removeFault(_ context: BasicRequestContext) async throws(ControlError) -> Response {
        let id = try context.parameter("id")
        guard await target.removeFault(id: id) else {
            let known = await target.faults().map(\.id)
            throw .notFound("no fault \"\(id.prefix(80))\"") { $0.known = known }
        }
        return JSONResponse.make(FaultRemoved(removed: id))
    }

    // MARK: Helpers

    /// A query parameter: digits only, at least `minimum`, at most `Int.max`.
    func integer(_ request: Request, _ name: String, minimum: Int) throws(ControlError) -> Int? {
        let values: [String] = request.uri.queryParameters.getAll(name)
        guard let text = values.last else { return nil }
        guard values.count == 1 else { throw .badRequest("\(name): give it once") }
        guard text.utf8.count <= 19, !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int(text),
            value >= minimum
        else {
            throw .badRequest("\(name): expected a whole number ≥ \(minimum), got \"\(text.prefix(40))\"")
        }
        return value
    }
}
