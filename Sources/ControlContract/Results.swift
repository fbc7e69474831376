import Lexical

/// `POST /v1/reset`: done.
public struct OkResult: ContractType, Equatable {
    public var ok: Bool
    public init() { ok = true }
    public static let schemaName = "Ok"
    public static var schema: Schema { .object([required("ok", .trueFlag)]) }
    public static var examples: [OkResult] { [OkResult()] }
}

/// `POST /v1/triggers/{name}`: fired.
public struct TriggerResult: ContractType, Equatable {
    public var ok: Bool
    public var trigger: String
    public init(trigger: String) {
        ok = true
        self.trigger = trigger
    }
    public static let schemaName = "TriggerResult"
    public static var schema: Schema { .object([required("ok", .trueFlag), required("trigger", .string)]) }
    public static var examples: [TriggerResult] { [TriggerResult(trigger: "touch")] }
}

/// `POST /v1/centrals/{address}/disconnect`: asked bluetoothd to disconnect.
public struct DisconnectResult: ContractType, Equatable {
    public var ok: Bool
    public var central: String
    public init(central: String) {
        ok = true
        self.central = central
    }
    public static let schemaName = "DisconnectResult"
    public static var schema: Schema { .object([required("ok", .trueFlag), required("central", .string(pattern: Patterns.address))]) }
    public static var examples: [DisconnectResult] { [DisconnectResult(central: "AA:BB:CC:DD:EE:01")] }
}

/// `PUT /v1/advertisement`: the variant now advertised (absent: the base advertisement).
public struct AdvertisementResult: ContractType, Equatable {
    public var ok: Bool
    public var variant: String?
    public init(variant: String?) {
        ok = true
        self.variant = variant
    }
    public static let schemaName = "AdvertisementResult"
    public static var schema: Schema { .object([required("ok", .trueFlag), optional("variant", .string)]) }
    public static var examples: [AdvertisementResult] { [AdvertisementResult(variant: "touched")] }
}

/// `PUT /v1/variables/{name}`: the value now held, as the status shows it.
public struct VariableResult: ContractType, Equatable {
    public var ok: Bool
    public var name: String
    public var value: String
    public init(name: String, value: String) {
        ok = true
        self.name = name
        self.value = value
    }
    public static let schemaName = "VariableResult"
    public static var schema: Schema { .object([required("ok", .trueFlag), required("name", .string), required("value", .string)]) }
    public static var examples: [VariableResult] { [VariableResult(name: "lockState", value: "0")] }
}

/// `DELETE /v1/faults/{id}`: removed.
public struct FaultRemoved: ContractType, Equatable {
    public var ok: Bool
    public var removed: String
    public init(removed: String) {
        ok = true
        self.removed = removed
    }
    public static let schemaName = "FaultRemoved"
    public static var schema: Schema { .object([required("ok", .trueFlag), required("removed", .string)]) }
    public static var examples: [FaultRemoved] { [FaultRemoved(removed: "f1")] }
}

/// `DELETE /v1/faults`: how many were removed.
public struct FaultsCleared: ContractType, Equatable {
    public var removed: Int
    public init(removed: Int) { self.removed = removed }
    public static let schemaName = "FaultsCleared"
    public static var schema: Schema { .object([required("removed", .integer(minimum: 0))]) }
    public static var examples: [FaultsCleared] { [FaultsCleared(removed: 2)] }
}
