/// `GET /v1/status`: a snapshot of the running emulator.
public struct Status: ContractType, Equatable {
    public var profile: String
    /// The device name the profile gives (its template rendered); nil when it gives none.
    public var deviceName: String?
    /// Nil until gattemu has an adapter (never-started emulators, bluetoothd away at start).
    public var adapter: AdapterInfo?
    public var advertising: AdvertisingInfo
    public var centrals: [CentralInfo]
    public var services: [ServiceInfo]
    public var variables: [String: String]
    public var state: [String: String]
    /// Every variable and state value with its kind and type (what `PUT /v1/variables/{name}` takes).
    public var values: [NamedValueInfo]
    public var timers: [String]
    public var triggers: [String]
    /// Trigger descriptions from the profile, by name.
    public var triggerDescriptions: [String: String]
    public var faults: [Fault]
    /// The profile's own faults (installed at start), to install again.
    public var faultPresets: [FaultRequest]
    public var lastEvent: Int
    /// Whether the device is a firmware-update target (its profile's `firmware` section): `GET /v1/firmware` has it.
    public var firmware: Bool

    public init(
        profile: String, deviceName: String?, adapter: AdapterInfo?, advertising: AdvertisingInfo, centrals: [CentralInfo],
        services: [ServiceInfo], variables: [String: String], state: [String: String], values: [NamedValueInfo],
        timers: [String], triggers: [String], triggerDescriptions: [String: String], faults: [Fault],
        faultPresets: [FaultRequest], lastEvent: Int, firmware: Bool = false
    ) {
        self.firmware = firmware
        self.profile = profile
        self.deviceName = deviceName
        self.adapter = adapter
        self.advertising = advertising
        self.centrals = centrals
        self.services = services
        self.variables = variables
        self.state = state
        self.values = values
        self.timers = timers
        self.triggers = triggers
        self.triggerDescriptions = triggerDescriptions
        self.faults = faults
        self.faultPresets = faultPresets
        self.lastEvent = lastEvent
    }

    public static let schemaName = "Status"
    public static var schema: Schema {
        .object([
            required("profile", .string),
            optional("deviceName", .string),
            optional("adapter", AdapterInfo.schema),
            required("advertising", AdvertisingInfo.schema),
            required("centrals", .array(CentralInfo.schema)),
            required("services", .array(ServiceInfo.schema)),
            required("variables", .map(.string)),
            required("state", .map(.string)),
            required("values", .array(NamedValueInfo.schema)),
            required("timers", .array(.string)),
            required("triggers", .array(.string)),
            required("triggerDescriptions", .map(.string)),
            required("faults", .array(Fault.reference)),
            required("faultPresets", .array(FaultRequest.reference)),
            required("lastEvent", .integer(minimum: 0)),
            required("firmware", .described("Whether GET /v1/firmware has a firmware-update target", .boolean)),
        ])
    }

    public static var examples: [Status] {
        [
            Status(
                profile: "profiles/leaf-reader.json", deviceName: "ETHS0000000000AB",
                adapter: AdapterInfo(name: "hci0", address: "00:00:00:00:00:AB", alias: "ETHS0000000000AB", privateAddresses: true),
                advertising: AdvertisingInfo.examples[0],
                centrals: [CentralInfo(address: "AA:BB:CC:DD:EE:01", mtu: 185, subscriptions: ["data"], state: ["authenticated": "false"])],
                services: ServiceInfo.examples, variables: ["touchDuration": "3000"], state: ["authenticated": "false"],
                values: [NamedValueInfo(name: "authenticated", kind: .state, type: .bool, value: "false", perCentral: true)],
                timers: ["untouch"], triggers: ["touch"], triggerDescriptions: ["touch": "A hand touches the reader"],
                faults: Fault.examples, faultPresets: [FaultRequest.examples[0]], lastEvent: 12,
                firmware: false)
        ]
    }
}

/// The adapter gattemu runs on.
public struct AdapterInfo: Codable, Sendable, Equatable {
    public var name: String
    /// What bluetoothd reports (the controller's own address).
    public var address: String
    public var alias: String?
    /// True while gattemu has the adapter show resolvable private addresses (`PUT /v1/adapter/address`) in place
    /// of `address`.
    public var privateAddresses: Bool?

    public init(name: String, address: String, alias: String?, privateAddresses: Bool? = nil) {
        self.name = name
        self.address = address
        self.alias = alias
        self.privateAddresses = privateAddresses
    }

    static var schema: Schema {
        .object([
            required("name", .string), required("address", .string), optional("alias", .string),
            optional(
                "privateAddresses",
                .described(
                    "True while gattemu has the adapter show resolvable private addresses in place of its own (PUT /v1/adapter/address)",
                    .boolean)),
        ])
    }
}

/// A connected central.
public struct CentralInfo: Codable, Sendable, Equatable {
    public var address: String
    /// The ATT MTU its requests reported; nil before the first one.
    public var mtu: Int?
    /// Characteristic ids it subscribed to.
    public var subscriptions: [String]
    /// Its own copy of the profile's `connectionState` values; nil when the profile has none.
    public var state: [String: String]?

    public init(address: String, mtu: Int?, subscriptions: [String], state: [String: String]?) {
        self.address = address
        self.mtu = mtu
        self.subscriptions = subscriptions
        self.state = state
    }

    static var schema: Schema {
        .object([
            required("address", .string),
            optional("mtu", .integer(minimum: 0)),
            required("subscriptions", .array(.string)),
            optional("state", .described("This central's own connectionState values (only when the profile declares some)", .map(.string))),
        ])
    }
}

/// A variable or state value of the profile.
public struct NamedValueInfo: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable, CaseIterable { case variable, state }
    public enum ValueType: String, Codable, Sendable, CaseIterable { case number, string, bool, bytes }

    public var name: String
    public var kind: Kind
    public var type: ValueType
    /// As the status shows it: numbers and booleans as text, bytes as hex.
    public var value: String
    /// Kept per central (`connectionState`): the value here is the shared one.
    public var perCentral: Bool

    public init(name: String, kind: Kind, type: ValueType, value: String, perCentral: Bool) {
        self.name = name
        self.kind = kind
        self.type = type
        self.value = value
        self.perCentral = perCentral
    }

    static var schema: Schema {
        .object([
            required("name", .string),
            required("kind", .string(enumeration: Kind.allCases.map(\.rawValue))),
            required("type", .string(enumeration: ValueType.allCases.map(\.rawValue))),
            required("value", .string),
            required("perCentral", .boolean),
        ])
    }
}
