import Bluetooth

/// Runs a profile's behaviour: feed it events, execute the effects it returns, in order.
///
/// A value type with no I/O: the runtime keeps one inside an actor. All state, variable and value
/// changes are applied while handling; randomness comes from the environment's seed, so the same
/// events give the same effects. Read the stored value after `handle` to answer a read without a reply.
public struct BehaviourEngine: Sendable {
    public let profile: DeviceProfile
    public let environment: EngineEnvironment

    /// Current variable values (for status output).
    public internal(set) var variables: [String: ProfileValue] = [:]
    /// Current state values (for status output).
    public internal(set) var state: [String: ProfileValue] = [:]
    /// The active advertisement variant; nil = base.
    public internal(set) var advertisementVariant: String?
    /// Whether the profile wants to be advertising (starts true; changed by start/stopAdvertising actions).
    public internal(set) var isAdvertising = true
    /// Connected centrals, in connection order.
    public internal(set) var centrals: [CentralID] = []
    /// Subscribed centrals per characteristic id.
    public internal(set) var subscribers: [CharacteristicID: [CentralID]] = [:]
    /// Open L2CAP channels per channel id, in opening order.
    public internal(set) var openChannels: [String: [ChannelLink]] = [:]
    /// Timers scheduled and not yet fired or cancelled.
    public internal(set) var activeTimers: Set<String> = []
    public internal(set) var counters: [String: Int] = [:]
    /// The `connectionState` values of each central that has had events since it connected.
    public internal(set) var connectionStates: [CentralID: [String: ProfileValue]] = [:]

    var values: [CharacteristicID: [UInt8]] = [:]
    /// The start of a frame each central has written so far, by characteristic (`frames`); less than a frame
    /// (so at most the characteristic's `maxLength`), dropped when the central disconnects.
    var heldFrames: [CentralID: [CharacteristicID: [UInt8]]] = [:]
    var generator: SeededGenerator
    var publishedAdvertisements: [AdvertisementSpec] = []
    /// What `publishedAdvertisements` were rendered from.
    var publishedInputs: (variant: String?, state: [String: ProfileValue], variables: [String: ProfileValue]) = (nil, [:], [:])
    /// The initial values of the `connectionState` names, each central's starting copy.
    let initialConnectionState: [String: ProfileValue]
    /// Durations already reported as clamped to the limits (each is logged once).
    var clampedDurations: Set<String> = []
    /// Each characteristic's longest value (`maxLength`, else 512), and the smallest of them, so that the
    /// common short value needs no lookup.
    let valueLimits: [CharacteristicID: Int]
    let smallestValueLimit: Int

    public init(profile: DeviceProfile, environment: EngineEnvironment) {
        self.profile = profile
        self.environment = environment
        self.generator = SeededGenerator(seed: environment.seed)
        let initialState = profile.initialState
        var initialConnectionState: [String: ProfileValue] = [:]
        for name in profile.connectionState { initialConnectionState[name] = initialState[name] }
        self.initialConnectionState = initialConnectionState
        var limits: [CharacteristicID: Int] = [:]
        for characteristic in profile.characteristics where limits[characteristic.id] == nil {
            limits[characteristic.id] = characteristic.maxLength ?? ProfileLimits.attributeValueLength
        }
        valueLimits = limits
        smallestValueLimit = limits.values.min() ?? ProfileLimits.attributeValueLength
        reset()
    }

    /// Back to the profile's initial state, as if just started with the same seed.
    public mutating func reset() {
        variables = profile.initialVariables
        state = profile.initialState
        advertisementVariant = nil
        isAdvertising = true
        centrals = []
        subscribers = [:]
        openChannels = [:]
        activeTimers = []
        counters = [:]
        connectionStates = [:]
        generator = SeededGenerator(seed: environment.seed)
        values = [:]
        heldFrames = [:]
        clampedDurations = []
        for characteristic in profile.characteristics {
            // Validation saw these with the same inputs; only `value(…)` of another value can make one longer.
            let limit = characteristic.maxLength ?? ProfileLimits.attributeValueLength
            values[characteristic.id] = Array(render(characteristic.value.template, event: nil).prefix(limit))
        }
        markAdvertisementsPublished()
    }

    /// The stored value of a characteristic; empty for unknown ids.
    public func value(of characteristic: CharacteristicID) -> [UInt8] {
        values[characteristic] ?? []
    }

    /// The advertisements as they should be now: active variant, current state and variables.
    public func advertisements() -> [AdvertisementSpec] {
        profile.advertisements(variant: advertisementVariant, environment: environment, state: state, variables: variables)
    }

    /// The device name as it should be now.
    public func deviceName() -> String? {
        profile.deviceName(environment: environment, state: state, variables: variables)
    }

    // MARK: Rendering

    /// Renders a template against the current state; counters and randomness advance.
    mutating func render(
        _ template: Template, event: EngineEvent?, arguments: [String: String] = [:]
    ) -> [UInt8] {
        renderChecked(template, event: event, arguments: arguments).bytes
    }

    /// Renders like ``render(_:event:arguments:)``; `capped` tells whether a value was cut on the way.
    mutating func renderChecked(
        _ template: Template, event: EngineEvent?, arguments: [String: String] = [:]
    ) -> (bytes: [UInt8], capped: Bool) {
        var request: [UInt8] = []
        if case .write(_, _, let value, _)? = event { request = value }
        if case .sdu(_, _, let value)? = event { request = value }
        var context = TemplateContext(
            variables: variables, state: state, adapterAddress: environment.adapterAddress,
            centralAddress: event?.central?.address, request: request, characteristicValues: values,
            arguments: arguments, counters: counters, generator: generator)
        let bytes = template.render(in: &context)
        counters = context.counters
        generator = context.generator
        return (bytes, context.capped)
    }

    /// `duration` in milliseconds as it stands now (a variable's current value), clamped as the engine clamps its own
    /// durations; what was clamped comes back as `.log` effects, for the runtime to log.
    public mutating func resolve(_ duration: DurationSpec, use: String) -> (milliseconds: Int, notes: [Effect]) {
        var notes: [Effect] = []
        let value = milliseconds(duration, use: use, into: &notes)
        return (value, notes)
    }

    /// A duration in milliseconds, clamped to `minimum`…``ProfileLimits/maximumDurationMilliseconds``; a value
    /// from a variable outside that range is logged (once per name and use) to `effects`.
    mutating func milliseconds(
        _ duration: DurationSpec, minimum: Int = 0, use: String, into effects: inout [Effect]
    ) -> Int {
        let maximum = ProfileLimits.maximumDurationMilliseconds
        switch duration {
        case .milliseconds(let value):
            return min(max(minimum, value), maximum)
        case .variable(let name):
            var value = 0
            if case .number(let number)? = state[name] ?? variables[name] { value = number }
            let clamped = min(max(minimum, value), maximum)
            if clamped != value, clampedDurations.insert("\(use) \(name)").inserted {
                effects.append(.log("\(use): \(name) is \(value) ms, outside \(minimum)…\(maximum); using \(clamped) ms"))
            }
            return clamped
        }
    }
}
