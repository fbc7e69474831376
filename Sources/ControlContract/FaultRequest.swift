import Bluetooth
import FaultCatalog
import Lexical

/// The operation a fault watches (declared with the fault kinds in ``FaultCatalog``).
public typealias FaultTrigger = FaultOperation

/// A fault to install (`POST /v1/faults`, a profile's `faults`, `--scenario`): scope keys and exactly one
/// action. The server decodes it with the profile's fault decoder (`FaultSpecDecoder`), which this schema
/// describes branch by branch: which `on` each action takes, `characteristic` only for operations on one,
/// `channel` only for operations on an L2CAP channel, `after` only for `on: start`.
public struct FaultRequest: ContractType, Equatable {
    public var id: String?
    public var description: String?
    public var comment: String?
    /// Nil: `start`, for the actions that allow it.
    public var on: FaultTrigger?
    public var characteristic: String?
    public var central: String?
    public var nth: Int?
    public var count: Int?
    public var probability: Double?
    public var seed: UInt64?
    public var after: DurationValue?
    /// For `on: upload`: the share of the image (0–100) a chunk must reach.
    public var percent: Int?
    /// For `on: channel`, `sdu`, `send`: the L2CAP channel's id.
    public var channel: String?
    public var action: FaultActionBody

    public init(on: FaultTrigger? = nil, action: FaultActionBody) {
        self.on = on
        self.action = action
    }

    /// `on` when a command line gives none: the kind's ``FaultKind/suggestedOperation`` (writes for errors,
    /// drops and delays, notifications for byte changes, pair for pairing faults); else the spec's own default
    /// (nil: at once), or writes when a characteristic or `nth` is given and the kind can watch them.
    public static func defaultTrigger(for action: FaultActionBody, characteristic: Bool, nth: Bool) -> FaultTrigger? {
        let kind = action.name.kind
        if let suggested = kind.suggestedOperation { return suggested }
        return (characteristic || nth) && kind.operations.contains(.write) ? .write : nil
    }

    // MARK: Schema

    public static let schemaName = "FaultSpec"
    public static var schema: Schema {
        var branches: [Schema] = []
        for action in FaultActionBody.Name.allCases {
            let allowed = action.allowedOn
            let onOperations = FaultTrigger.allCases.filter { $0.isAboutCharacteristic && allowed.contains($0) }
            if !onOperations.isEmpty {
                branches.append(
                    .object(
                        scope(on: onOperations, onRequired: true, characteristic: true, after: false) + [
                            required(action.rawValue, action.schema)
                        ]))
            }
            if allowed.contains(.connect) {
                branches.append(
                    .object(
                        scope(on: [.connect], onRequired: true, characteristic: false, after: false) + [
                            required(action.rawValue, action.schema)
                        ]))
            }
            if allowed.contains(.pair) {
                // `on` may be left out only where it defaults to pair. A pairing is refused with true, not a result.
                branches.append(
                    .object(
                        scope(on: [.pair], onRequired: action.kind.implicitOperation != .pair, characteristic: false, after: false)
                            + [required(action.rawValue, action == .refuse ? .trueFlag : action.schema)]))
            }
            if allowed.contains(.upload) {
                branches.append(
                    .object(
                        scope(on: [.upload], onRequired: true, characteristic: false, after: false, percent: true) + [
                            required(action.rawValue, action.schema)
                        ]))
            }
            let channels = FaultTrigger.allCases.filter { $0.isAboutChannel && allowed.contains($0) }
            if action == .refuse {
                // A result the kernel gives holds for every request while installed: no filter of requests.
                let held = LECreditBasedChannel.Refusal.held
                let perRequest = LECreditBasedChannel.Refusal.allCases.filter(\.isPerRequest)
                branches.append(
                    .object(
                        scope(on: channels, onRequired: true, characteristic: false, after: false, channel: true) + [
                            required(action.rawValue, .oneOf([.trueFlag, .string(enumeration: perRequest.map(\.rawValue))]))
                        ]))
                branches.append(
                    .object(
                        scope(on: channels, onRequired: true, characteristic: false, after: false, channel: true, requests: false) + [
                            required(action.rawValue, .string(enumeration: held.map(\.rawValue)))
                        ]))
            } else if !channels.isEmpty {
                branches.append(
                    .object(
                        scope(on: channels, onRequired: true, characteristic: false, after: false, channel: true) + [
                            required(action.rawValue, action.schema)
                        ]))
            }
            let firmware = FaultTrigger.allCases.filter { $0.isAboutFirmware && $0 != .upload && allowed.contains($0) }
            if !firmware.isEmpty {
                branches.append(
                    .object(
                        scope(on: firmware, onRequired: true, characteristic: false, after: false) + [
                            required(action.rawValue, action.schema)
                        ]))
            }
            if allowed.contains(.start) {
                branches.append(
                    .object(
                        scope(on: [.start], onRequired: action.kind.implicitOperation != .start, characteristic: false, after: true) + [
                            required(action.rawValue, action.schema)
                        ]))
            }
        }
        return .described("Scope keys plus exactly one action (docs/control.md, \"Faults\")", .oneOf(branches))
    }

    /// The scope keys of a branch; `requests` false leaves out those that choose requests (`central`, `nth`, `count`,
    /// `probability`).
    static func scope(
        on: [FaultTrigger], onRequired: Bool, characteristic: Bool, after: Bool, percent: Bool = false, channel: Bool = false,
        requests: Bool = true
    ) -> [Schema.Property] {
        var properties: [Schema.Property] = [
            optional("id", .string(pattern: Patterns.identifier)),
            optional("description", .string),
            optional("$comment", .string),
            .init("on", .string(enumeration: on.map(\.rawValue)), required: onRequired),
        ]
        if characteristic { properties.append(optional("characteristic", .string(minLength: 1))) }
        if channel {
            properties.append(
                optional("channel", .described("The L2CAP channel's id (the profile's channels)", .string(pattern: Patterns.identifier))))
        }
        if requests {
            properties += [
                optional("central", .string(pattern: Patterns.address)),
                optional(
                    "nth",
                    .described(
                        "Fire from the nth matching operation; implies count 1 unless count is given",
                        .integer(minimum: 1, maximum: UInt64(FaultCatalog.maximumCount)))),
                optional("count", .integer(minimum: 1, maximum: UInt64(FaultCatalog.maximumCount))),
                optional("probability", .number(minimum: 0, maximum: 1)),
            ]
        }
        properties.append(optional("seed", .integer(minimum: 0, maximum: UInt64.max)))
        if after { properties.append(optional("after", DurationValue.schema)) }
        if percent {
            properties.append(
                optional(
                    "percent",
                    .described(
                        "Only upload chunks that bring the upload to at least this share of the image",
                        .integer(
                            minimum: Int64(FaultCatalog.percentages.lowerBound), maximum: UInt64(FaultCatalog.percentages.upperBound)))))
        }
        return properties
    }

    public static var examples: [FaultRequest] {
        var write = FaultRequest(on: .write, action: .error(.name("not-authorized")))
        write.id = "auth"
        write.description = "refuse the second write"
        write.comment = "from a scenario"
        write.characteristic = "config"
        write.central = "AA:BB:CC:DD:EE:01"
        write.nth = 2
        write.count = 1
        write.probability = 0.5
        write.seed = 7
        var start = FaultRequest(action: .silence(.text("10s")))
        start.after = .milliseconds(500)
        var upload = FaultRequest(on: .upload, action: .smpError(12))
        upload.percent = 60
        var send = FaultRequest(on: .send, action: .closeChannel)
        send.channel = "data"
        send.nth = 100
        return [write, start, FaultRequest(on: .notify, action: .corrupt(.replace(at: 0, hex: "ff"))), upload, send]
    }

    // MARK: Coding

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        id = try container.decodeIfPresent(String.self, forKey: Key("id"))
        description = try container.decodeIfPresent(String.self, forKey: Key("description"))
        comment = try container.decodeIfPresent(String.self, forKey: Key("$comment"))
        on = try container.decodeIfPresent(FaultTrigger.self, forKey: Key("on"))
        characteristic = try container.decodeIfPresent(String.self, forKey: Key("characteristic"))
        central = try container.decodeIfPresent(String.self, forKey: Key("central"))
        nth = try container.decodeIfPresent(Int.self, forKey: Key("nth"))
        count = try container.decodeIfPresent(Int.self, forKey: Key("count"))
        probability = try container.decodeIfPresent(Double.self, forKey: Key("probability"))
        seed = try container.decodeIfPresent(UInt64.self, forKey: Key("seed"))
        after = try container.decodeIfPresent(DurationValue.self, forKey: Key("after"))
        percent = try container.decodeIfPresent(Int.self, forKey: Key("percent"))
        channel = try container.decodeIfPresent(String.self, forKey: Key("channel"))
        let names = container.allKeys.compactMap { FaultActionBody.Name(rawValue: $0.stringValue) }
        guard names.count == 1, let name = names.first else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "a fault takes exactly one action"))
        }
        action = try FaultActionBody(name, from: container.superDecoder(forKey: Key(name.rawValue)))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encodeIfPresent(id, forKey: Key("id"))
        try container.encodeIfPresent(description, forKey: Key("description"))
        try container.encodeIfPresent(comment, forKey: Key("$comment"))
        try container.encodeIfPresent(on, forKey: Key("on"))
        try container.encodeIfPresent(characteristic, forKey: Key("characteristic"))
        try container.encodeIfPresent(central, forKey: Key("central"))
        try container.encodeIfPresent(nth, forKey: Key("nth"))
        try container.encodeIfPresent(count, forKey: Key("count"))
        try container.encodeIfPresent(probability, forKey: Key("probability"))
        try container.encodeIfPresent(seed, forKey: Key("seed"))
        try container.encodeIfPresent(after, forKey: Key("after"))
        try container.encodeIfPresent(percent, forKey: Key("percent"))
        try container.encodeIfPresent(channel, forKey: Key("channel"))
        try action.encode(to: container.superEncoder(forKey: Key(action.name.rawValue)))
    }
}

/// What a fault does: the one action key of a ``FaultRequest`` and its value.
public enum FaultActionBody: Sendable, Equatable {
    case delay(DelayValue)
    case drop
    case error(ATTErrorValue)
    case corrupt(CorruptValue)
    case truncate(Int)
    case rewrite(RewriteValue)
    /// Extra copies; nil: `true` (one).
    case duplicate(Int?)
    case reorder
    case disconnect
    case silence(DurationValue)
    /// Nil: back to the base advertisement.
    case advertise(String?)
    /// Nil: `true` (one second).
    case powerCycle(DurationValue?)
    /// Refuse the pairing (`on: pair`) or the L2CAP channel (`on: channel`); a channel with this result by name (nil: `true`).
    case refuse(String?)
    /// Type a wrong passkey, or say the numbers differ (`on: pair`).
    case wrongPasskey
    /// bluetoothd forgets every paired central (`on: start`).
    case forgetBonds
    /// Refuse an SMP request with this code of its group (`on: upload`, `confirm`, `reset`).
    case smpError(Int)
    /// Keep the uploaded image with a wrong hash (`on: upload`).
    case wrongHash
    /// Lose the pending image at the reset (`on: reset`).
    case losePending
    /// Close the L2CAP channel after the SDU (`on: sdu`, `send`).
    case closeChannel

    public enum Name: String, CaseIterable, Sendable {
        case delay, drop, error, corrupt, truncate, rewrite, duplicate, reorder, disconnect, silence, advertise, powerCycle
        case refuse, wrongPasskey, forgetBonds, smpError, wrongHash, losePending, closeChannel

        /// Its declaration in ``FaultCatalog`` (a test checks every case has one and every kind a case).
        public var kind: FaultKind {
            guard let kind = FaultCatalog.kind(named: rawValue) else { preconditionFailure("\(rawValue) is not in FaultCatalog") }
            return kind
        }

        /// The operations this action may watch.
        public var allowedOn: Set<FaultTrigger> { Set(kind.operations) }

        var schema: Schema { kind.parameter.schema }
    }

    public var name: Name {
        switch self {
        case .delay: .delay
        case .drop: .drop
        case .error: .error
        case .corrupt: .corrupt
        case .truncate: .truncate
        case .rewrite: .rewrite
        case .duplicate: .duplicate
        case .reorder: .reorder
        case .disconnect: .disconnect
        case .silence: .silence
        case .advertise: .advertise
        case .powerCycle: .powerCycle
        case .refuse: .refuse
        case .wrongPasskey: .wrongPasskey
        case .forgetBonds: .forgetBonds
        case .smpError: .smpError
        case .wrongHash: .wrongHash
        case .losePending: .losePending
        case .closeChannel: .closeChannel
        }
    }

    init(_ name: Name, from decoder: any Decoder) throws {
        let single = try decoder.singleValueContainer()
        switch name {
        case .delay:
            if let range = try? single.decode([String: DurationValue].self), let min = range["min"], let max = range["max"] {
                self = .delay(.range(min: min, max: max))
            } else {
                self = .delay(.fixed(try single.decode(DurationValue.self)))
            }
        case .drop: self = .drop
        case .reorder: self = .reorder
        case .disconnect: self = .disconnect
        case .refuse: self = .refuse((try? single.decode(Bool.self)) == true ? nil : try single.decode(String.self))
        case .wrongPasskey: self = .wrongPasskey
        case .forgetBonds: self = .forgetBonds
        case .wrongHash: self = .wrongHash
        case .losePending: self = .losePending
        case .closeChannel: self = .closeChannel
        case .smpError: self = .smpError(try single.decode(Int.self))
        case .error:
            if let code = try? single.decode(Int.self) {
                self = .error(.code(code))
            } else {
                self = .error(.name(try single.decode(String.self)))
            }
        case .corrupt: self = .corrupt(try single.decode(CorruptValue.self))
        case .truncate: self = .truncate(try single.decode(Int.self))
        case .rewrite: self = .rewrite(try single.decode(RewriteValue.self))
        case .duplicate: self = .duplicate((try? single.decode(Bool.self)) == true ? nil : try single.decode(Int.self))
        case .silence: self = .silence(try single.decode(DurationValue.self))
        case .advertise: self = .advertise(single.decodeNil() ? nil : try single.decode(String.self))
        case .powerCycle: self = .powerCycle((try? single.decode(Bool.self)) == true ? nil : try single.decode(DurationValue.self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var single = encoder.singleValueContainer()
        switch self {
        case .delay(.fixed(let duration)): try single.encode(duration)
        case .delay(.range(let min, let max)): try single.encode(["min": min, "max": max])
        case .drop, .reorder, .disconnect, .refuse(nil), .wrongPasskey, .forgetBonds, .wrongHash, .losePending, .closeChannel:
            try single.encode(true)
        case .refuse(let result?): try single.encode(result)
        case .smpError(let code): try single.encode(code)
        case .error(.name(let name)): try single.encode(name)
        case .error(.code(let code)): try single.encode(code)
        case .corrupt(let value): try single.encode(value)
        case .truncate(let count): try single.encode(count)
        case .rewrite(let value): try single.encode(value)
        case .duplicate(let copies): if let copies { try single.encode(copies) } else { try single.encode(true) }
        case .silence(let duration): try single.encode(duration)
        case .advertise(let variant): if let variant { try single.encode(variant) } else { try single.encodeNil() }
        case .powerCycle(let duration): if let duration { try single.encode(duration) } else { try single.encode(true) }
        }
    }
}

/// `delay`: fixed, or uniform between `min` and `max`.
public enum DelayValue: Sendable, Equatable {
    case fixed(DurationValue)
    case range(min: DurationValue, max: DurationValue)
}

/// `error`: a named ATT error or an application code.
public enum ATTErrorValue: Sendable, Equatable {
    /// A name (``names``) or `"0x80"`…`"0x9F"`.
    case name(String)
    /// 128…159.
    case code(Int)

    /// ``ATTError``'s names, sorted.
    public static let names = ATTError.namesInProfiles.keys.sorted()
}

/// `corrupt`: flip bits, replace bytes, or XOR them.
public enum CorruptValue: Codable, Sendable, Equatable {
    case flipBits(Int)
    case replace(at: Int?, hex: String)
    case xor(at: Int?, hex: String)

    enum Key: String, CodingKey { case flipBits, at, hex, xor }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        if let flips = try container.decodeIfPresent(Int.self, forKey: .flipBits) {
            self = .flipBits(flips)
            return
        }
        let at = try container.decodeIfPresent(Int.self, forKey: .at)
        if let hex = try container.decodeIfPresent(String.self, forKey: .hex) {
            self = .replace(at: at, hex: hex)
            return
        }
        self = .xor(at: at, hex: try container.decode(String.self, forKey: .xor))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        switch self {
        case .flipBits(let count): try container.encode(count, forKey: .flipBits)
        case .replace(let at, let hex):
            try container.encodeIfPresent(at, forKey: .at)
            try container.encode(hex, forKey: .hex)
        case .xor(let at, let hex):
            try container.encodeIfPresent(at, forKey: .at)
            try container.encode(hex, forKey: .xor)
        }
    }
}

/// `rewrite`: every occurrence of `match` (the first only when `all` is false) replaced by `replace`.
public struct RewriteValue: Codable, Sendable, Equatable {
    public var match: RewriteBytes
    public var replace: RewriteBytes
    /// Nil: every occurrence.
    public var all: Bool?

    public init(match: RewriteBytes, replace: RewriteBytes, all: Bool? = nil) {
        self.match = match
        self.replace = replace
        self.all = all
    }
}

/// A byte value of `rewrite`: hex text as in a profile, or a ``ValueBody`` (`{"hex"|"utf8"|"base64": …}`).
public enum RewriteBytes: Codable, Sendable, Equatable {
    case hex(String)
    case value(ValueBody)

    public init(from decoder: any Decoder) throws {
        let single = try decoder.singleValueContainer()
        if let text = try? single.decode(String.self) {
            self = .hex(text)
        } else {
            self = .value(try single.decode(ValueBody.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var single = encoder.singleValueContainer()
        switch self {
        case .hex(let text): try single.encode(text)
        case .value(let value): try single.encode(value)
        }
    }
}
