import Bluetooth

/// The answer to a pending read or write.
public enum Reply: Sendable, Equatable {
    case value([UInt8])
    case success
    case error(ATTError)
}

/// Who receives a notification.
public enum NotificationTarget: Sendable, Equatable {
    case central(CentralID)
    case allSubscribers
}

/// One thing the runtime must do, in order, after the engine handled an event.
///
/// `.delay` sleeps before the effects after it. Without a `.reply`, the runtime answers a read
/// with the stored value from its offset and a write with success (before other effects).
/// `.notify` also updates the stored value; `.setValue` is emitted whenever a stored value changes otherwise.
public enum Effect: Sendable, Equatable {
    case reply(Reply)
    case notify(characteristic: CharacteristicID, value: [UInt8], target: NotificationTarget, indicate: Bool)
    case setValue(characteristic: CharacteristicID, value: [UInt8])
    case delay(Duration)
    /// Re-register the advertisements for this variant (nil = base); resolve them with
    /// `BehaviourEngine.advertisements()`, which also reflects state used by their templates.
    case switchAdvertisement(variant: String?)
    case startAdvertising, stopAdvertising
    case disconnect(CentralID)
    case scheduleTimer(id: String, after: Duration, repeating: Bool)
    case cancelTimer(id: String)
    case log(String)
    /// Sends an SDU on each of the open channels `links` (of channel `channel`).
    case send(channel: String, value: [UInt8], links: [UInt64])
    /// Streams `source` on each of `links`, in SDUs as large as each central takes.
    case stream(channel: String, source: StreamSource, links: [UInt64])
    /// Closes each of `links`.
    case closeChannel(channel: String, links: [UInt64])

    /// Whether this is the answer to the request.
    public var isReply: Bool {
        if case .reply = self { true } else { false }
    }
}

/// What handling one event produced: the ids of the rules that fired, in order, and the effects.
///
/// Effects are plain values so a fault injector can post-process them (drop, delay, corrupt, reorder).
public struct EngineOutcome: Sendable, Equatable {
    public var firedRules: [String]
    public var effects: [Effect]

    public init(firedRules: [String] = [], effects: [Effect] = []) {
        self.firedRules = firedRules
        self.effects = effects
    }

    /// The reply among the effects, if a rule gave one.
    public var reply: Reply? {
        for case .reply(let reply) in effects { return reply }
        return nil
    }

    /// The notifications and indications, in order.
    public var notifications: [(characteristic: CharacteristicID, value: [UInt8], target: NotificationTarget, indicate: Bool)] {
        effects.compactMap {
            if case .notify(let c, let v, let t, let i) = $0 { return (c, v, t, i) }
            return nil
        }
    }
}

/// What the engine needs from the host: the adapter address and the seed for randomness.
public struct EngineEnvironment: Sendable, Equatable {
    /// Templates see it as `address` (12 uppercase hex) and `addressWithColons`.
    public var adapterAddress: BluetoothAddress
    /// The same seed and the same events give the same effects.
    public var seed: UInt64

    public init(adapterAddress: BluetoothAddress, seed: UInt64 = 0) {
        self.adapterAddress = adapterAddress
        self.seed = seed
    }
}
