import Bluetooth

/// Everything a template can refer to while rendering, plus the mutable parts (counters, randomness).
///
/// Names resolve in this order: built-ins (`request`, `address`, …), then state, then variables.
public struct TemplateContext: Sendable {
    public var variables: [String: ProfileValue]
    public var state: [String: ProfileValue]
    /// The adapter's address.
    public var adapterAddress: BluetoothAddress
    /// The central the event came from, if any.
    public var centralAddress: BluetoothAddress?
    /// The written value being handled; empty otherwise.
    public var request: [UInt8]
    /// Current characteristic values by id, for `value(id)`.
    public var characteristicValues: [CharacteristicID: [UInt8]]
    /// Arguments of a named trigger, for `arg("name")`.
    public var arguments: [String: String]
    public var counters: [String: Int]
    public var generator: SeededGenerator
    /// Set by rendering when it cut a value at ``ProfileLimits/valueLength`` bytes or clamped a count at 512.
    public var capped = false

    public init(
        variables: [String: ProfileValue] = [:], state: [String: ProfileValue] = [:],
        adapterAddress: BluetoothAddress = .zero, centralAddress: BluetoothAddress? = nil, request: [UInt8] = [],
        characteristicValues: [CharacteristicID: [UInt8]] = [:], arguments: [String: String] = [:],
        counters: [String: Int] = [:], generator: SeededGenerator = SeededGenerator(seed: 0)
    ) {
        self.variables = variables
        self.state = state
        self.adapterAddress = adapterAddress
        self.centralAddress = centralAddress
        self.request = request
        self.characteristicValues = characteristicValues
        self.arguments = arguments
        self.counters = counters
        self.generator = generator
    }
}

/// Names every template can use besides variables and state.
public enum TemplateBuiltins {
    /// Built-in names and what they are.
    public static let names: [String: String] = [
        "request": "the written value being handled (bytes)",
        "address": "the adapter address as 12 uppercase hex digits (text)",
        "addressWithColons": "the adapter address as AA:BB:CC:DD:EE:FF (text)",
        "addressBytes": "the adapter address as 6 bytes, most significant first",
        "central": "the central's address as 12 uppercase hex digits (text)",
        "centralWithColons": "the central's address as AA:BB:CC:DD:EE:FF (text)",
        "centralBytes": "the central's address as 6 bytes, most significant first",
    ]

    /// Built-in functions with their argument counts.
    public static let functions: [String: ClosedRange<Int>] = [
        "u8": 1...1, "u16le": 1...1, "u16be": 1...1, "u24le": 1...1, "u24be": 1...1,
        "u32le": 1...1, "u32be": 1...1, "u64le": 1...1, "u64be": 1...1,
        "len": 1...1, "random": 1...1, "counter": 1...1, "sum8": 1...16, "xor8": 1...16, "crc16": 1...16,
        "hex": 1...1, "utf8": 1...1, "reverse": 1...1, "pad": 1...2, "fill": 2...2, "value": 1...1, "arg": 1...1,
    ]

    /// Longest byte string `random`, `pad` and `fill` produce (the ATT maximum attribute length).
    public static let maximumLength = ATTMTU.maximumValueLength
}
