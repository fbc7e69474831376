import Bluetooth
import JSON

/// A behaviour rule: when `trigger` happens and every condition holds, run `actions` in order.
public struct Rule: Sendable, Equatable {
    /// The given id, or `rules[N]`.
    public var id: String
    public var trigger: RuleTrigger
    public var conditions: [Condition]
    public var actions: [Action]
    /// Later rules are not considered for this event once this one fired.
    public var stop: Bool
    /// Fires only when no regular (non-`otherwise`) rule fired for the event.
    public var otherwise: Bool
    public var path: String
}

/// What a rule reacts to.
public enum RuleTrigger: Sendable, Equatable {
    case connect, disconnect
    case read(CharacteristicID)
    case write(CharacteristicID, WriteMatcher)
    case subscribe(CharacteristicID)
    case unsubscribe(CharacteristicID)
    case timer(String)
    case trigger(String)
    /// A central opened an L2CAP channel of this id (`{"open": id}`).
    case channelOpen(String)
    /// An SDU arrived on a channel of this id (`{"sdu": id, …}`), matched as a write is.
    case sdu(String, WriteMatcher)
    /// A channel of this id closed (`{"close": id}`): either side, or the link went down.
    case channelClose(String)

    /// The channel id this trigger names, if any.
    public var channel: String? {
        switch self {
        case .channelOpen(let id), .sdu(let id, _), .channelClose(let id): id
        default: nil
        }
    }

    /// The characteristic id this trigger names, if any.
    public var characteristic: CharacteristicID? {
        switch self {
        case .read(let id), .write(let id, _), .subscribe(let id), .unsubscribe(let id): id
        default: nil
        }
    }
}

/// Conditions on the written bytes; all given ones must hold.
public struct WriteMatcher: Sendable, Equatable {
    public var equals: Template?
    public var prefix: Template?
    /// `value & mask == expected` over the first `mask.count` bytes (shorter values never match).
    public var mask: (mask: [UInt8], expected: [UInt8])?
    public var length: ClosedRange<Int>?
    /// A pattern that must match somewhere in the value decoded as UTF-8 (compiled at load; see ``BytePattern``).
    public var regex: BytePattern?
    public var json: JSONFieldMatcher?
    /// Matches when, of the rules for this characteristic with `closestTo` that could fire for the write, this
    /// rule's bytes are the closest to the written ones (fewest differing bytes, then length difference;
    /// ties: the first in the file). Imported profiles answer unrecorded writes with it.
    public var closestTo: [UInt8]?

    public init() {}

    public static func == (a: WriteMatcher, b: WriteMatcher) -> Bool {
        a.equals == b.equals && a.prefix == b.prefix && a.mask?.mask == b.mask?.mask
            && a.mask?.expected == b.mask?.expected && a.length == b.length && a.regex == b.regex && a.json == b.json
            && a.closestTo == b.closestTo
    }

    /// How far `value` is from `reference`: differing bytes over the common length plus the length difference.
    public static func distance(_ value: [UInt8], _ reference: [UInt8]) -> Int {
        zip(value, reference).reduce(0) { $0 + ($1.0 == $1.1 ? 0 : 1) } + abs(value.count - reference.count)
    }
}

/// Matches a field of JSON carried in a write, after removing framing.
public struct JSONFieldMatcher: Sendable, Equatable {
    /// Each string's first occurrence is removed, in order (BLEProof: `["<", ">"]`).
    public var removeFirst: [String]
    public var stripPrefix: String?
    public var stripSuffix: String?
    /// Dotted field path, e.g. `password` or `wifi.ssid`.
    public var field: String
    public var condition: Condition

    /// What the field must be. Invalid JSON or a missing field never matches (except `.absent`).
    public enum Condition: Sendable, Equatable {
        case equals(PlainJSON)
        case notEquals(PlainJSON)
        case exists, absent
    }
}

/// A guard on a state value, variable or trigger argument.
public struct Condition: Sendable, Equatable {
    public enum Scope: String, Sendable, Equatable {
        case state, variable, argument
    }

    public enum Comparison: String, Sendable, Equatable, CaseIterable {
        case equals, notEquals, less, lessOrEqual, greater, greaterOrEqual
    }

    public var scope: Scope
    public var name: String
    public var comparison: Comparison
    public var value: ProfileValue
    public var path: String
}

/// A duration given in milliseconds or by a number variable holding milliseconds.
public enum DurationSpec: Sendable, Equatable {
    case milliseconds(Int)
    case variable(String)
}

/// A timer rules can react to with `{"timer": id}`.
public struct TimerDefinition: Sendable, Equatable {
    public var id: String
    public var after: DurationSpec
    public var repeats: Bool
    /// Scheduled on every `.connect`.
    public var startOnConnect: Bool
    /// Scheduled when the device starts, and again after a reset (``BehaviourEngine/started()``): a beacon's timer.
    public var startOnRun: Bool = false
    /// Cancelled when the last central disconnects.
    public var cancelOnDisconnect: Bool
    public var path: String
}

/// One step of a rule.
public struct Action: Sendable, Equatable {
    public var kind: Kind
    public var path: String

    public enum Kind: Sendable, Equatable {
        /// Answer the read/write being handled with a value.
        case reply(Template)
        case succeed
        case fail(ATTError)
        case notify(characteristic: CharacteristicID, value: Template, toAll: Bool, indicate: Bool)
        case setValue(characteristic: CharacteristicID, value: Template)
        case set(name: String, value: Assignment)
        case delay(DurationSpec)
        /// nil = the base advertisement.
        case advertise(variant: String?)
        case startAdvertising, stopAdvertising
        case disconnect
        case startTimer(String, after: DurationSpec?)
        case cancelTimer(String)
        case log(Template)
        /// Sends an SDU on a channel: the event's own channel when the rule answers one of this id, else every open
        /// channel of the id.
        case send(channel: String, value: Template)
        /// Sends a stream of SDUs (each as large as the central takes) at the channel's pace; targets as `send`.
        case stream(channel: String, source: StreamSource)
        /// Closes a channel (targets as `send`): the central sees the channel disconnected, the link stays.
        case closeChannel(String)
    }

    /// The new value of a `set` action.
    public enum Assignment: Sendable, Equatable {
        case literal(ProfileValue)
        /// Rendered to bytes.
        case template(Template)
        /// Adds to a number.
        case increment(Int)
    }
}
