import Lexical

/// One device of `GET /v1/devices`.
public struct DeviceEntry: ContractType, Equatable {
    public enum State: String, Codable, Sendable, CaseIterable {
        /// Waiting for bluetoothd or its adapter.
        case starting
        /// Registered and serving.
        case running
        /// Could not start (`reason`); the rig's other devices run on.
        case failed
        case stopped
    }

    /// The id in `/v1/devices/{device}/…` and in each event's `device`.
    public var id: String
    /// The profile file it runs.
    public var profile: String
    /// The adapter it was given (`hci1`, an address, or absent for the first one).
    public var adapter: String?
    /// The adapter it runs on, once started.
    public var adapterName: String?
    public var address: String?
    public var state: State
    /// Why it failed.
    public var reason: String?

    public init(
        id: String, profile: String, adapter: String? = nil, adapterName: String? = nil, address: String? = nil, state: State,
        reason: String? = nil
    ) {
        self.id = id
        self.profile = profile
        self.adapter = adapter
        self.adapterName = adapterName
        self.address = address
        self.state = state
        self.reason = reason
    }

    public static let schemaName = "Device"
    public static var schema: Schema {
        .object([
            required("id", .string(minLength: 1)),
            required("profile", .string),
            optional("adapter", .described("The adapter asked for (hciN or an address); absent: the first one", .string)),
            optional("adapterName", .described("The adapter it runs on, once started", .string)),
            optional("address", .described("The adapter's address, once started", .string(pattern: Patterns.address))),
            required("state", .string(enumeration: State.allCases.map(\.rawValue))),
            optional("reason", .described("Why the device could not start", .string)),
        ])
    }
    public static var examples: [DeviceEntry] {
        [
            DeviceEntry(
                id: "lock", profile: "profiles/noke-lock.json", adapter: "hci1", adapterName: "hci1", address: "00:AA:01:01:00:01",
                state: .running),
            DeviceEntry(id: "reader", profile: "profiles/leaf-reader.json", adapter: "hci9", state: .failed, reason: "no adapter hci9"),
        ]
    }
}

/// `GET /v1/devices`: the devices of this gattemu, in the order they were given.
public struct DeviceList: ContractType, Equatable {
    public var devices: [DeviceEntry]
    public init(devices: [DeviceEntry]) { self.devices = devices }
    public static let schemaName = "DeviceList"
    public static var schema: Schema { .object([required("devices", .array(DeviceEntry.reference))]) }
    public static var examples: [DeviceList] { DeviceEntry.examples.map { DeviceList(devices: [$0]) } }
}
