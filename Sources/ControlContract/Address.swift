import Lexical

/// What `PUT /v1/adapter/address` asks for, as decoded from ``AddressBody``.
public enum AddressRequest: Sendable, Equatable {
    /// A new address: resolvable private addresses of a fresh key, which no earlier central can resolve.
    case random
    /// The adapter's own address again.
    case original
}

/// `PUT /v1/adapter/address`: `{"address": "random" | "original"}`.
public struct AddressBody: ContractType, Equatable {
    public var address: String
    public init(address: String) { self.address = address }
    public static let schemaName = "AddressRequest"
    public static var schema: Schema {
        .object([
            required(
                "address",
                .described(
                    "\"random\": the device shows a new address (resolvable private addresses of a fresh key); \"original\": its own again",
                    .string(enumeration: ["random", "original"])))
        ])
    }
    public static var examples: [AddressBody] { [AddressBody(address: "random"), AddressBody(address: "original")] }
}

/// `PUT /v1/adapter/address`: what the adapter shows now.
public struct AddressChanged: ContractType, Equatable {
    public var ok: Bool
    public var adapter: String
    /// The adapter's own (identity) address: bonded centrals learnt it when they paired.
    public var identity: String
    /// The identity resolving key the addresses centrals see are made from (32 hex digits); absent when the adapter
    /// shows its own address.
    public var irk: String?
    /// How many times gattemu changed the address.
    public var changes: Int

    public init(adapter: String, identity: String, irk: String?, changes: Int) {
        ok = true
        self.adapter = adapter
        self.identity = identity
        self.irk = irk
        self.changes = changes
    }

    public static let schemaName = "AddressChanged"
    public static var schema: Schema {
        .object([
            required("ok", .trueFlag), required("adapter", .string), required("identity", .string(pattern: Patterns.address)),
            optional("irk", .described("The key of the resolvable private addresses centrals see now", .string(pattern: "^[0-9a-f]{32}$"))),
            required("changes", .integer(minimum: 0)),
        ])
    }
    public static var examples: [AddressChanged] {
        [AddressChanged(adapter: "hci0", identity: "00:AA:01:00:00:23", irk: "3f0c9a7e5b2d41c88e1f6a0b7c2d3e4f", changes: 1)]
    }
}
