import Bluetooth
import FaultCatalog

/// One fault to inject: which operations it watches (scope), when it fires, and what it does.
///
/// Declared in a profile's `"faults"` array, in a scenario file (`gattemu run --scenario`), or added
/// through the control API; all three use the same JSON form (see `docs/control.md`).
public struct FaultSpec: Sendable, Equatable {
    /// A name for listing and removing it; assigned (`f1`, `f2`, …) when not given.
    public var id: String?
    public var on: FaultOperationKind
    public var scope: FaultScope
    public var action: FaultAction
    /// Human text shown in listings.
    public var description: String?

    public init(
        id: String? = nil, on: FaultOperationKind, scope: FaultScope = FaultScope(), action: FaultAction, description: String? = nil
    ) {
        self.id = id
        self.on = on
        self.scope = scope
        self.action = action
        self.description = description
    }
}

/// The kind of operation a fault watches (declared with the fault kinds in ``FaultCatalog``).
public typealias FaultOperationKind = FaultOperation

extension FaultOperation {
    var carriesAnswer: Bool { self == .read || self == .write }
    var isNotification: Bool { self == .notify || self == .indicate }
}

/// Which matching operations make a fault fire.
///
/// Operations of the fault's kind that match `characteristic` and `central` are counted from 1. The fault is
/// eligible from the `nth` one on, then fires with `probability` (drawn from its seeded generator),
/// at most `count` times (unlimited when nil).
public struct FaultScope: Sendable, Equatable {
    public var characteristic: CharacteristicID?
    /// The one central it applies to; nil: any.
    public var central: BluetoothAddress?
    public var nth: Int
    public var count: Int?
    public var probability: Double
    /// Seed of this fault's generator (probability, jitter, bit flips); nil: derived from the run's seed and the fault id.
    public var seed: UInt64?
    /// For `on: start`: milliseconds to wait before firing.
    public var afterMilliseconds: Int
    /// For `on: upload`: only chunks that bring the upload to at least this share of the image (0–100) match.
    public var percent: Int?
    /// For channel operations (`channel`, `sdu`, `send`): the L2CAP channel's id; nil: any.
    public var channel: String?

    public init(
        characteristic: CharacteristicID? = nil, central: BluetoothAddress? = nil, nth: Int = 1, count: Int? = nil,
        probability: Double = 1, seed: UInt64? = nil, afterMilliseconds: Int = 0, percent: Int? = nil
    ) {
        self.characteristic = characteristic
        self.central = central
        self.nth = nth
        self.count = count
        self.probability = probability
        self.seed = seed
        self.afterMilliseconds = afterMilliseconds
        self.percent = percent
    }
}

/// What a fault does when it fires.
public enum FaultAction: Sendable, Equatable {
    /// Hold the answer or notification for `min`…`max` milliseconds (fixed when equal).
    case delay(minMilliseconds: Int, maxMilliseconds: Int)
    /// Never answer the read/write (the central's ATT transaction times out), or don't send the notification.
    case drop
    /// Answer the read/write with this ATT error (the behaviour engine does not see the request).
    case error(ATTError)
    /// Change bytes of a notification, read answer or written value.
    case corrupt(Corruption)
    /// Keep only the first `n` bytes of a notification, read answer or written value.
    case truncate(Int)
    /// Replace each occurrence of `match` (the first only unless `all`) by `replace` in a notification, read answer
    /// or written value; the result is cut to ``FaultCatalog/maximumValueBytes``.
    case rewrite(match: [UInt8], replace: [UInt8], all: Bool)
    /// Send a notification `1 + copies` times.
    case duplicate(copies: Int)
    /// Hold a notification back and send it right after the next one of the same characteristic.
    case reorder
    /// Disconnect the central of the operation (every connected central for `on: start`).
    case disconnect
    /// Stop advertising for this many milliseconds, then advertise again.
    case silence(milliseconds: Int)
    /// Switch the advertisement variant (nil: back to the base advertisement).
    case advertise(variant: String?)
    /// Power the adapter off, wait this many milliseconds, power it on and advertise again.
    case powerCycle(offMilliseconds: Int)
    /// Refuse the pairing (`on: pair`), whatever the profile's `security` says, or an L2CAP channel (`on: channel`) with
    /// this result (nil: `true`, 0x0006). A result the kernel gives (not ``LECreditBasedChannel/Refusal/isPerRequest``)
    /// holds for every request on the channel while the fault is installed (``heldRefusal``).
    case refuse(LECreditBasedChannel.Refusal?)
    /// Answer the pairing wrongly (`on: pair`): type a passkey one off the right one, or say the numbers differ.
    case wrongPasskey
    /// Make bluetoothd forget every paired central's keys without telling them (a factory reset).
    case forgetBonds
    /// Refuse an SMP request (`on: upload`, `confirm`, `reset`) with this error code of its group.
    case smpError(Int)
    /// Keep the image of the upload under way with a wrong hash (`on: upload`).
    case wrongHash
    /// Lose the image pending in slot 1 at this reset (`on: reset`).
    case losePending
    /// Close the L2CAP channel right after the SDU (`on: sdu`, `send`).
    case closeChannel

    /// The JSON key naming this action.
    public var name: String {
        switch self {
        case .delay: "delay"
        case .drop: "drop"
        case .error: "error"
        case .corrupt: "corrupt"
        case .truncate: "truncate"
        case .rewrite: "rewrite"
        case .duplicate: "duplicate"
        case .reorder: "reorder"
        case .disconnect: "disconnect"
        case .silence: "silence"
        case .advertise: "advertise"
        case .powerCycle: "powerCycle"
        case .refuse: "refuse"
        case .wrongPasskey: "wrongPasskey"
        case .forgetBonds: "forgetBonds"
        case .smpError: "smpError"
        case .wrongHash: "wrongHash"
        case .losePending: "losePending"
        case .closeChannel: "closeChannel"
        }
    }

    /// A channel refusal the kernel gives to every request while the fault is installed, not gattemu to one request.
    public var heldRefusal: LECreditBasedChannel.Refusal? {
        if case .refuse(let refusal?) = self, !refusal.isPerRequest { refusal } else { nil }
    }

    /// Its declaration in ``FaultCatalog``.
    public var kind: FaultKind {
        guard let kind = FaultCatalog.kind(named: name) else { preconditionFailure("fault action \(name) is not in FaultCatalog") }
        return kind
    }

    /// The operations this action makes sense for.
    var allowedOn: Set<FaultOperationKind> { Set(kind.operations) }
}

/// How `corrupt` changes bytes.
public enum Corruption: Sendable, Equatable {
    /// Flip this many bits at positions drawn from the fault's generator.
    case flipBits(Int)
    /// Replace bytes starting at `at` (bytes past the end are appended).
    case replace(at: Int, bytes: [UInt8])
    /// XOR bytes starting at `at` with a mask (bytes past the end are ignored).
    case xor(at: Int, mask: [UInt8])
}
