import ControlBodies
import Emulator
import FoundationEssentials
import Hummingbird
import Profile

/// The `/v1` endpoints. Every handler answers JSON; problems are thrown as ``ControlError``.
struct ControlRoutes: Sendable {
    let target: any ControlTarget
    let streams: EventStreamSlots
    let heartbeat: Duration

    func register(on router: Router<BasicRequestContext>) {
        let v1 = router.group("v1")
        v1.get("openapi.json") { _, _ in OpenAPIDocument.response() }
        v1.get("status") { _, _ in JSONAny.encoded(await target.status()).response() }
        v1.get("events") { request, _ in try events(request) }
        v1.get("events/stream") { request, _ in try stream(request) }
        v1.post("characteristics/:id/notify") { request, context in try await notify(request, context, indicate: false) }
        v1.post("characteristics/:id/indicate") { request, context in try await notify(request, context, indicate: true) }
        v1.put("characteristics/:id/value") { request, context in try await setValue(request, context) }
        v1.post("triggers/:name") { request, context in try await trigger(request, context) }
        v1.get("faults") { _, _ in JSONAny.object(["faults": .encoded(await target.faults())]).response() }
        v1.post("faults") { request, _ in try await addFaults(request) }
        v1.delete("faults") { _, _ in JSONAny.object(["removed": .int(await target.clearFaults())]).response() }
        v1.delete("faults/:id") { _, context in try await removeFault(context) }
        v1.post("centrals/:address/disconnect") { _, context in try await disconnect(context) }
        v1.put("advertisement") { request, _ in try await advertisement(request) }
        v1.post("reset") { _, _ in
            await target.reset()
            return JSONAny.object(["ok": .bool(true)]).response()
        }
    }

    // MARK: Events

    func events(_ request: Request) throws(ControlError) -> Response {
        let since = try integer(request, "since") ?? 0
        let limit = try integer(request, "limit") ?? 1000
        guard since >= 0, limit >= 1 else { throw .badRequest("since must be ≥ 0 and limit ≥ 1") }
        let events = target.events.events(since: since, limit: limit)
        return JSONAny.object([
            "events": .array(events.map { .raw($0.json) }),
            "last": .int(events.last?.sequence ?? max(since, 0)),
            "latest": .int(target.events.lastSequence),
        ]).response()
    }

    /// Server-Sent Events (``EventStream``); resumes after `since` or `Last-Event-ID`; 503 past the stream limit.
    func stream(_ request: Request) throws(ControlError) -> Response {
        let lastID = request.headers.first { $0.name.canonicalName == "last-event-id" }.flatMap { Int($0.value) }
        let since = try integer(request, "since") ?? lastID
        guard let slot = streams.take() else {
            throw ControlError(.serviceUnavailable, "too many event-stream clients (\(streams.maximum))", details: ["limit": .int(streams.maximum)])
        }
        let body = EventStream.body(target.events.subscribe(since: since), heartbeat: heartbeat, slot: slot)
        return Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"], body: body)
    }

    // MARK: Characteristics

    func notify(_ request: Request, _ context: BasicRequestContext, indicate: Bool) async throws(ControlError) -> Response {
        var request = request
        let id = context.parameters.get("id") ?? ""
        guard let node = try await request.jsonObject() else { throw .badRequest("missing JSON body") }
        let value = try Bodies.value(node)
        do {
            try await target.notify(characteristic: id, value: value, indicate: indicate)
        } catch {
            throw ControlError(error)
        }
        return JSONAny.object(["ok": .bool(true), "characteristic": .string(id), "hex": .string(value.hexString())]).response()
    }

    func setValue(_ request: Request, _ context: BasicRequestContext) async throws(ControlError) -> Response {
        var request = request
        let id = context.parameters.get("id") ?? ""
        guard let node = try await request.jsonObject() else { throw .badRequest("missing JSON body") }
        let value = try Bodies.value(node)
        do {
            try await target.setValue(characteristic: id, value: value)
        } catch {
            throw ControlError(error)
        }
        return JSONAny.object(["ok": .bool(true), "characteristic": .string(id), "hex": .string(value.hexString())]).response()
    }

    // MARK: Triggers, centrals, advertising

    func trigger(_ request: Request, _ context: BasicRequestContext) async throws(ControlError) -> Response {
        var request = request
        let name = context.parameters.get("name") ?? ""
        let arguments = try Bodies.arguments(try await request.jsonObject(required: false))
        do {
            try await target.fireTrigger(name, arguments: arguments)
        } catch {
            throw ControlError(error)
        }
        return JSONAny.object(["ok": .bool(true), "trigger": .string(name)]).response()
    }

    func disconnect(_ context: BasicRequestContext) async throws(ControlError) -> Response {
        let address = (context.parameters.get("address") ?? "").uppercased()
        guard FaultSpecDecoder.parseHex(address.replacing(":", with: ""))?.count == 6, address.count == 17 else {
            throw .badRequest("bad central address \"\(address)\": expected AA:BB:CC:DD:EE:FF")
        }
        do {
            try await target.disconnect(central: address)
        } catch {
            throw ControlError(error)
        }
        return JSONAny.object(["ok": .bool(true), "central": .string(address)]).response()
    }

    func advertisement(_ request: Request) async throws(ControlError) -> Response {
        var request = request
        guard let node = try await request.jsonObject() else { throw .badRequest("missing JSON body") }
        let variant = try Bodies.variant(node)
        do {
            try await target.setAdvertisement(variant: variant)
        } catch {
            throw ControlError(error)
        }
        return JSONAny.object(["ok": .bool(true), "variant": variant.map(JSONAny.string) ?? .null]).response()
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
        var added: [FaultInfo] = []
        for spec in specs {
            do {
                added.append(try await target.addFault(spec))
            } catch {
                for fault in added { _ = await target.removeFault(id: fault.id) }
                throw ControlError(error)
            }
        }
        let body: JSONAny = single && added.count == 1 ? .encoded(added[0]) : .object(["faults": .encoded(added)])
        return body.response(status: .created)
    }

    func removeFault(_ context: BasicRequestContext) async throws(ControlError) -> Response {
        let id = context.parameters.get("id") ?? ""
        guard await target.removeFault(id: id) else {
            throw .notFound("no fault \"\(id)\"", ["known": .array(await target.faults().map { .string($0.id) })])
        }
        return JSONAny.object(["ok": .bool(true), "removed": .string(id)]).response()
    }

    // MARK: Helpers

    func integer(_ request: Request, _ name: String) throws(ControlError) -> Int? {
        guard let text = request.uri.queryParameters.get(name) else { return nil }
        guard let value = Int(text) else { throw .badRequest("\(name): expected a whole number, got \"\(text)\"") }
        return value
    }
}
