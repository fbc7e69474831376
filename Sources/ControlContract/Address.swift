/// What `PUT /v1/adapter/address` asks for, as decoded from ``AddressBody``.
public enum AddressRequest: Sendable, Equatable {
    /// A new random static address.
    case random
    /// The address the adapter had before gattemu changed it.
    case original
    /// This random static address (`C0:11:22:33:44:55`).
    case address(String)
}

/// `PUT /v1/adapter/address`: `{"address": "random" | "original" | "C0:11:22:33:44:55"}`.
public struct AddressBody: ContractType, Equatable {
    public var address: String
    public init(address: String) { self.address = address }
    public static let schemaName = "AddressRequest"
    public static var schema: Schema {
        .object([required("address", .described(
            "\"random\" for a new random static address, \"original\" for the adapter's own back, or a random static address",
            .oneOf([.string(enumeration: ["random", "original"]), .string(pattern: Patterns.staticAddress)])))])
    }
    public static var examples: [AddressBody] { [AddressBody(address: "random"), AddressBody(address: "C0:11:22:33:44:55")] }
}

/// `PUT /v1/adapter/address`: the address centrals find the device at now.
public struct AddressChanged: ContractType, Equatable {
    public var ok: Bool
    public var adapter: String
    public var address: String
    public var previous: String
    /// False when the adapter is back on its public address.
    public var randomStatic: Bool

    public init(adapter: String, address: String, previous: String, randomStatic: Bool) {
        ok = true
        self.adapter = adapter
        self.address = address
        self.previous = previous
        self.randomStatic = randomStatic
    }

    public static let schemaName = "AddressChanged"
    public static var schema: Schema {
        .object([required("ok", .trueFlag), required("adapter", .string), required("address", .string(pattern: Patterns.address)),
                 required("previous", .string(pattern: Patterns.address)), required("randomStatic", .boolean)])
    }
    public static var examples: [AddressChanged] {
        [AddressChanged(adapter: "hci0", address: "C0:11:22:33:44:55", previous: "00:AA:01:00:00:23", randomStatic: true)]
    }
}
