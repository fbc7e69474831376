import Lexical

/// An installed fault with its counters (`GET /v1/faults`, status).
public struct Fault: ContractType, Equatable {
    public var id: String
    public var on: FaultTrigger
    public var action: String
    /// The action in words (`error not-authorized`).
    public var summary: String
    public var characteristic: String?
    /// The L2CAP channel it watches (channel operations).
    public var channel: String?
    public var central: String?
    public var nth: Int
    public var count: Int?
    public var probability: Double
    public var seed: UInt64?
    /// Matching operations seen.
    public var matched: Int
    public var fired: Int
    /// Fired `count` times: it will not fire again.
    public var exhausted: Bool
    public var description: String?

    public init(
        id: String, on: FaultTrigger, action: String, summary: String, characteristic: String? = nil, central: String? = nil,
        nth: Int = 1, count: Int? = nil, probability: Double = 1, seed: UInt64? = nil, matched: Int = 0, fired: Int = 0,
        exhausted: Bool = false, description: String? = nil, channel: String? = nil
    ) {
        self.id = id
        self.on = on
        self.action = action
        self.summary = summary
        self.characteristic = characteristic
        self.channel = channel
        self.central = central
        self.nth = nth
        self.count = count
        self.probability = probability
        self.seed = seed
        self.matched = matched
        self.fired = fired
        self.exhausted = exhausted
        self.description = description
    }

    public static let schemaName = "Fault"
    public static var schema: Schema {
        .object([
            required("id", .string(pattern: Patterns.identifier)),
            required("on", .string(enumeration: FaultTrigger.allCases.map(\.rawValue))),
            required("action", .string(enumeration: FaultActionBody.Name.allCases.map(\.rawValue))),
            required("summary", .string),
            optional("characteristic", .string),
            optional("channel", .string),
            optional("central", .string),
            required("nth", .integer(minimum: 1)),
            optional("count", .integer(minimum: 1)),
            required("probability", .number(minimum: 0, maximum: 1)),
            optional("seed", .integer(minimum: 0, maximum: UInt64.max)),
            required("matched", .integer(minimum: 0)),
            required("fired", .integer(minimum: 0)),
            required("exhausted", .boolean),
            optional("description", .string),
        ])
    }
    public static var examples: [Fault] {
        [
            Fault(
                id: "f1", on: .write, action: "error", summary: "error not-authorized", characteristic: "config",
                central: "AA:BB:CC:DD:EE:01",
                nth: 2, count: 1, probability: 1, seed: 7, matched: 3, fired: 1, exhausted: true, description: "auth"),
            Fault(
                id: "cut", on: .send, action: "closeChannel", summary: "close the channel", nth: 100, count: 1, matched: 100,
                fired: 1, exhausted: true, channel: "data"),
        ]
    }
}

/// Installed faults (`GET /v1/faults`), or several just added (`POST /v1/faults` with an array).
public struct FaultList: ContractType, Equatable {
    public var faults: [Fault]
    public init(faults: [Fault]) { self.faults = faults }
    public static let schemaName = "FaultList"
    public static var schema: Schema { .object([required("faults", .array(Fault.reference))]) }
    public static var examples: [FaultList] { [FaultList(faults: Fault.examples)] }
}

/// `POST /v1/faults` body: one spec, an array of specs, or `{"faults": [...]}`.
public enum FaultsBody: ContractType, Equatable {
    case one(FaultRequest)
    case several([FaultRequest])
    case scenario([FaultRequest])

    public static let schemaName = "FaultsRequest"
    public static var schema: Schema {
        .oneOf([
            FaultRequest.reference,
            .array(FaultRequest.reference, maxItems: 64),
            .object([required("faults", .array(FaultRequest.reference, maxItems: 64))]),
        ])
    }
    public static var examples: [FaultsBody] {
        [.one(FaultRequest.examples[0]), .several(FaultRequest.examples), .scenario(FaultRequest.examples)]
    }

    enum Key: String, CodingKey { case faults }

    public init(from decoder: any Decoder) throws {
        if let list = try? decoder.singleValueContainer().decode([FaultRequest].self) {
            self = .several(list)
            return
        }
        if let container = try? decoder.container(keyedBy: Key.self), container.contains(.faults) {
            self = .scenario(try container.decode([FaultRequest].self, forKey: .faults))
            return
        }
        self = .one(try FaultRequest(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .one(let fault): try fault.encode(to: encoder)
        case .several(let faults):
            var container = encoder.singleValueContainer()
            try container.encode(faults)
        case .scenario(let faults):
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(faults, forKey: .faults)
        }
    }
}

/// `POST /v1/faults` answer (201): the fault for a single spec, `{"faults": [...]}` for an array or scenario.
public enum FaultsAdded: ContractType, Equatable {
    case one(Fault)
    case several(FaultList)

    public static let schemaName = "FaultsAdded"
    public static var schema: Schema { .oneOf([Fault.reference, FaultList.reference]) }
    public static var examples: [FaultsAdded] { [.one(Fault.examples[0]), .several(FaultList.examples[0])] }

    public init(from decoder: any Decoder) throws {
        if let list = try? FaultList(from: decoder) { self = .several(list) } else { self = .one(try Fault(from: decoder)) }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .one(let fault): try fault.encode(to: encoder)
        case .several(let list): try list.encode(to: encoder)
        }
    }

    public var faults: [Fault] {
        switch self {
        case .one(let fault): [fault]
        case .several(let list): list.faults
        }
    }
}
