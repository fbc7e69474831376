import Lexical

/// The control API's contract: every operation, and every type they take and answer.
public enum ControlContract {
    static let characteristicID = Operation.Parameter(
        "id", in: .path, .string(minLength: 1), description: "Characteristic id from the profile (e.g. tx).")
    static let json = Operation.Content.json
    static let deviceID = Operation.Parameter(
        "device", in: .path, .string(minLength: 1), description: "Device id from GET /v1/devices (the rig file's or the profile's name).")

    /// Every operation: those of the process and of its device, the device list, then each device's operations
    /// under `/v1/devices/{device}` (``Operation/ofDevice``).
    public static let operations: [Operation] =
        processOperations.map { operation in
            var operation = operation
            if operation.deviceScoped, !rigWide.contains(operation.id) {
                operation.errors = Array(Set(operation.errors).union([409])).sorted()
            }
            return operation
        } + [listDevices] + processOperations.filter(\.deviceScoped).map(\.ofDevice)

    public static let listDevices = Operation(
        .get, "/v1/devices", id: "listDevices",
        summary: "The devices this gattemu runs (one, or a rig's), with their adapters and states",
        description: "Devices", content: json(DeviceList.reference), deviceScoped: false)

    /// Operations about one device that a rig answers at their own paths for all its devices: the event log and stream.
    public static let rigWide: Set<String> = ["getEvents", "streamEvents"]

    /// The operations at their own paths: with one device, the device's; in a rig, 409 for those about one device
    /// (but the event log and stream, which carry every device's events).
    public static let processOperations: [Operation] = [
        Operation(
            .get, "/v1/status", id: "getStatus",
            summary:
                "Device, adapter, advertising (fields and bytes), GATT table with values, connected centrals, variables and state, triggers, faults",
            description: "Status", content: json(Status.reference)),
        Operation(
            .get, "/v1/events", id: "getEvents", summary: "Logged events after a sequence number (polling)",
            parameters: [
                .init(
                    "since", in: .query, .integer(minimum: 0, maximum: UInt64(Int64.max)),
                    description: "Only events with seq > since (default 0)."),
                .init(
                    "limit", in: .query, .integer(minimum: 1, maximum: UInt64(Int64.max)),
                    description: "At most this many (default 1000; 10,000 are kept)."),
            ],
            description: "Events", content: json(EventPage.reference)),
        Operation(
            .get, "/v1/events/stream", id: "streamEvents",
            summary:
                "Server-Sent Events: kept events after `since` (or Last-Event-ID), then every new one. Each message has `id: seq`, `event: kind`, `data: event JSON`.",
            parameters: [
                .init("since", in: .query, .integer(minimum: 0, maximum: UInt64(Int64.max))),
                .init(
                    "Last-Event-ID", in: .header, .string(pattern: "^[0-9]{1,18}$"),
                    description: "Resume after this seq (EventSource sends it when it reconnects)."),
            ],
            description: "Event stream", content: .eventStream, errors: [503]),
        Operation(
            .post, "/v1/characteristics/{id}/notify", id: "notify", summary: "Notify every subscriber (faults apply)",
            parameters: [characteristicID], body: (ValueBody.reference, true), description: "Sent", content: json(ValueResult.reference),
            errors: [404, 409]),
        Operation(
            .post, "/v1/characteristics/{id}/indicate", id: "indicate", summary: "Indicate to every subscriber (faults apply)",
            parameters: [characteristicID], body: (ValueBody.reference, true), description: "Sent", content: json(ValueResult.reference),
            errors: [404, 409]),
        Operation(
            .put, "/v1/characteristics/{id}/value", id: "setValue", summary: "Replace the stored value without notifying",
            parameters: [characteristicID], body: (ValueBody.reference, true), description: "Stored", content: json(ValueResult.reference),
            errors: [404, 409]),
        Operation(
            .post, "/v1/triggers/{name}", id: "fireTrigger", summary: "Fire a named trigger of the profile",
            parameters: [.init("name", in: .path, .string(minLength: 1))], body: (TriggerBody.reference, false),
            description: "Fired", content: json(TriggerResult.reference), errors: [404]),
        Operation(
            .put, "/v1/variables/{name}", id: "setVariable",
            summary: "Set a variable or state value of the profile (e.g. Noke's lockState); rules and advertisements see it at once",
            parameters: [.init("name", in: .path, .string(minLength: 1))], body: (VariableBody.reference, true),
            description: "Set", content: json(VariableResult.reference), errors: [404, 409]),
        Operation(
            .get, "/v1/faults", id: "listFaults", summary: "Installed faults with their counters", description: "Faults",
            content: json(FaultList.reference)),
        Operation(
            .post, "/v1/faults", id: "addFaults", summary: "Add one fault, an array of faults or {\"faults\": [...]} (all or nothing)",
            body: (FaultsBody.reference, true), status: 201, description: "Added: the fault, or {faults: [...]} for an array or scenario",
            content: json(FaultsAdded.reference), errors: [404, 409]),
        Operation(
            .delete, "/v1/faults", id: "clearFaults", summary: "Remove every fault (held-back notifications are sent)",
            description: "Removed", content: json(FaultsCleared.reference)),
        Operation(
            .delete, "/v1/faults/{id}", id: "removeFault", summary: "Remove one fault",
            parameters: [.init("id", in: .path, .string(minLength: 1))], description: "Removed", content: json(FaultRemoved.reference),
            errors: [404]),
        Operation(
            .post, "/v1/centrals/{address}/disconnect", id: "disconnectCentral", summary: "Disconnect a connected central",
            parameters: [
                .init(
                    "address", in: .path, .string(pattern: Patterns.address),
                    description: "AA:BB:CC:DD:EE:FF (colons may be percent-encoded)")
            ],
            description: "Asked bluetoothd to disconnect", content: json(DisconnectResult.reference), errors: [400, 404, 503]),
        Operation(
            .put, "/v1/services/{id}", id: "setService",
            summary: "Add a service of the profile to the GATT table or remove it; bluetoothd sends Service Changed",
            parameters: [.init("id", in: .path, .string(minLength: 1), description: "Service id from the profile.")],
            body: (ServiceBody.reference, true), description: "Done", content: json(ServiceResult.reference), errors: [404, 503]),
        Operation(
            .get, "/v1/pairing", id: "getPairing",
            summary: "How the device pairs, the prompt waiting for an answer, the passkey gattemu displayed",
            description: "Pairing", content: json(PairingStatus.reference)),
        Operation(
            .post, "/v1/pairing", id: "answerPairing",
            summary: "Answer the pairing prompt: the passkey the central shows, or accept/refuse",
            body: (PairingAnswerBody.reference, true), description: "Answered", content: json(PairingAnswered.reference), errors: [409]),
        Operation(
            .get, "/v1/bonds", id: "listBonds", summary: "Centrals paired with the adapter (bluetoothd's keys)",
            description: "Bonds", content: json(BondList.reference), errors: [503]),
        Operation(
            .delete, "/v1/bonds/{address}", id: "forgetBond",
            summary:
                "Forget a central's keys without telling it (a factory-reset device): its next encrypted reconnect fails until it pairs again",
            parameters: [
                .init(
                    "address", in: .path, .string(pattern: Patterns.address),
                    description: "AA:BB:CC:DD:EE:FF (colons may be percent-encoded)")
            ],
            description: "Forgotten", content: json(BondForgotten.reference), errors: [400, 404, 503]),
        Operation(
            .put, "/v1/adapter/address", id: "changeAddress",
            summary:
                "The device shows a new address (a device back from a factory reset: resolvable private addresses of a fresh key) or its own again; the adapter is powered off and on, centrals are disconnected; needs root",
            body: (AddressBody.reference, true), description: "Changed", content: json(AddressChanged.reference), errors: [400, 409, 503]),
        Operation(
            .put, "/v1/advertisement", id: "setAdvertisement", summary: "Switch the advertisement variant (null: base)",
            body: (VariantBody.reference, true), description: "Switched", content: json(AdvertisementResult.reference), errors: [404]),
        Operation(
            .post, "/v1/reset", id: "reset",
            summary: "Behaviour back to the profile's initial state (connections, subscriptions and faults kept)",
            description: "Done", content: json(OkResult.reference)),
        Operation(
            .get, "/v1/firmware", id: "getFirmware",
            summary:
                "A firmware-update target's slots (as an SMP state read shows them), the upload under way and whether it is rebooting; 404 for a profile without a firmware section",
            description: "Firmware", content: json(FirmwareStatus.reference), errors: [404]),
        Operation(
            .get, "/v1/channels", id: "listChannels",
            summary: "The profile's L2CAP channels: the PSM each listens on and the channels open on it (docs/channels.md)",
            description: "Channels", content: json(ChannelList.reference)),
        Operation(
            .post, "/v1/channels/{id}/send", id: "sendSDU",
            summary: "Send an SDU on every open channel of a profile channel (channel faults apply); 409 when none is open",
            parameters: [.init("id", in: .path, .string(minLength: 1), description: "Channel id from the profile.")],
            body: (ValueBody.reference, true), description: "Queued", content: json(ChannelSent.reference), errors: [404, 409]),
        Operation(
            .post, "/v1/relay/snapshot", id: "relaySnapshot",
            summary:
                "`gattemu relay`: write the session so far as it is written on exit (-o profile, --capture btsnoop); 409 for a device that is no relay or a relay started without either",
            description: "Written", content: json(RelaySnapshotResult.reference), errors: [409, 503]),
        Operation(
            .get, "/v1/openapi.json", id: "openapi", summary: "This document", description: "OpenAPI 3 document",
            content: json(.anyObject), isPublic: true, deviceScoped: false),
        Operation(
            .get, "/", id: "dashboard", summary: "The dashboard (HTML; it asks for the token when the API needs one)",
            description: "The dashboard page", content: .asset("text/html"), isPublic: true, deviceScoped: false),
        Operation(
            .get, "/dashboard.css", id: "dashboardStyle", summary: "The dashboard's style sheet",
            description: "CSS", content: .asset("text/css"), isPublic: true, deviceScoped: false),
        Operation(
            .get, "/dashboard.js", id: "dashboardScript", summary: "The dashboard's script",
            description: "JavaScript", content: .asset("text/javascript"), isPublic: true, deviceScoped: false),
        Operation(
            .get, "/timeline.js", id: "timelineScript",
            summary: "The sequence-diagram drawing shared by the dashboard and `gattemu report`",
            description: "JavaScript", content: .asset("text/javascript"), isPublic: true, deviceScoped: false),
    ]

    /// Every type with a component in the document.
    public static let types: [any ContractType.Type] = [
        Status.self, Event.self, EventPage.self, ValueBody.self, ValueResult.self, TriggerBody.self, TriggerResult.self,
        VariableBody.self, VariableResult.self, FaultRequest.self, FaultsBody.self, Fault.self, FaultList.self, FaultsAdded.self,
        FaultsCleared.self, FaultRemoved.self, DisconnectResult.self, VariantBody.self, AdvertisementResult.self, OkResult.self,
        PairingStatus.self, PairingPrompt.self, DisplayedPasskey.self, PairingAnswerBody.self, PairingAnswered.self, Bond.self,
        BondList.self, BondForgotten.self, ServiceBody.self, ServiceResult.self, AddressBody.self, AddressChanged.self,
        RelaySnapshotResult.self, DeviceList.self, DeviceEntry.self, FirmwareStatus.self, ChannelList.self, ChannelSent.self,
        ErrorBody.self,
    ]

    /// The operation for `method` and a request path (`/v1/faults/f1`), or nil.
    public static func operation(_ method: String, path: String) -> Operation? {
        let segments = path.split(separator: "/")
        return operations.first { $0.method.rawValue == method && matches($0, segments) }
    }

    /// The methods of the operations at a request path (OPTIONS not included), or nil when none has that path.
    public static func methods(at path: String) -> [String]? {
        let segments = path.split(separator: "/")
        let methods = operations.filter { matches($0, segments) }.map(\.method.rawValue)
        return methods.isEmpty ? nil : methods.sorted()
    }

    static func matches(_ operation: Operation, _ segments: [Substring]) -> Bool {
        let template = operation.segments
        return template.count == segments.count && zip(template, segments).allSatisfy { $0 == nil || $0 == $1 }
    }
}
