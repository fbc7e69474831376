import BlueZ
import Bluetooth
import Profile

/// One operation the runtime asks the fault engine about.
public struct FaultOperation: Sendable, Equatable {
    public var kind: FaultOperationKind
    public var characteristic: CharacteristicID?
    /// The central(s) concerned: the requester, or a notification's recipients.
    public var centrals: [BluetoothAddress]
    /// An upload chunk's: the share of the image (0–100) the upload reaches with it.
    public var percent: Int?
    /// A channel operation's: the L2CAP channel's id.
    public var channel: String?

    public init(
        _ kind: FaultOperationKind, characteristic: CharacteristicID? = nil, centrals: [BluetoothAddress] = [], percent: Int? = nil,
        channel: String? = nil
    ) {
        self.kind = kind
        self.characteristic = characteristic
        self.centrals = centrals
        self.percent = percent
        self.channel = channel
    }
}

/// An installed fault with its counters and its own seeded generator.
public struct ActiveFault: Sendable, Equatable {
    public let id: String
    public let spec: FaultSpec
    /// Operations that matched the scope so far.
    public internal(set) var matched = 0
    /// Times it fired.
    public internal(set) var fired = 0
    var generator: SeededGenerator

    /// True when it fired `count` times and will not fire again.
    public var exhausted: Bool { spec.scope.count.map { fired >= $0 } ?? false }
}

/// A fault that fired on an operation, with the action it resolved to (jitter and bit positions drawn).
public struct FiredFault: Sendable, Equatable {
    public var id: String
    public var action: FaultAction
    public var operation: FaultOperation
    /// Which matching operation this was (1 = the first).
    public var occurrence: Int
    /// The resolved delay for `delay`, in milliseconds.
    public var delayMilliseconds: Int?
    /// Resolved byte changes for `corrupt`, `truncate` and `rewrite`.
    public var mutation: ValueMutation?
}

/// A byte change with its randomness already drawn, so applying it is a pure function.
public enum ValueMutation: Sendable, Equatable {
    /// Flip bit `r % (count * 8)` for each `r`.
    case flipBits([UInt64])
    case replace(at: Int, bytes: [UInt8])
    case xor(at: Int, mask: [UInt8])
    case truncate(Int)
    /// Replace each occurrence of `match` (the first only unless `all`), left to right, never inside a replacement.
    case rewrite(match: [UInt8], replace: [UInt8], all: Bool)

    /// `value` changed; a result longer than ``ATTMTU/maximumValueLength`` (the ATT value limit) is cut to it (``applied(to:)`` says so).
    public func apply(to value: [UInt8]) -> [UInt8] { applied(to: value).bytes }

    /// `value` changed, cut to `limit` (by default ``ATTMTU/maximumValueLength``, the ATT value limit; an SDU's is its
    /// channel's MTU), and how many bytes the cut removed.
    public func applied(to value: [UInt8], limit: Int = ATTMTU.maximumValueLength) -> (bytes: [UInt8], cut: Int) {
        let bytes = changed(value)
        return bytes.count > limit ? (Array(bytes.prefix(limit)), bytes.count - limit) : (bytes, 0)
    }

    private func changed(_ value: [UInt8]) -> [UInt8] {
        var bytes = value
        switch self {
        case .flipBits(let draws):
            guard !bytes.isEmpty else { return bytes }
            for draw in draws {
                let bit = Int(draw % UInt64(bytes.count * 8))
                bytes[bit / 8] ^= UInt8(1 << (bit % 8))
            }
        case .replace(let at, let replacement):
            if at > bytes.count { bytes += [UInt8](repeating: 0, count: at - bytes.count) }
            for (index, byte) in replacement.enumerated() {
                if at + index < bytes.count { bytes[at + index] = byte } else { bytes.append(byte) }
            }
        case .xor(let at, let mask):
            for (index, byte) in mask.enumerated() where at + index < bytes.count { bytes[at + index] ^= byte }
        case .truncate(let keep):
            bytes = Array(bytes.prefix(keep))
        case .rewrite(let match, let replacement, let all):
            guard !match.isEmpty, match.count <= bytes.count else { return bytes }
            var result: [UInt8] = []
            var index = 0
            var replaced = false
            while index < bytes.count {
                if !(replaced && !all), index + match.count <= bytes.count, bytes[index..<index + match.count].elementsEqual(match) {
                    result += replacement
                    index += match.count
                    replaced = true
                } else {
                    result.append(bytes[index])
                    index += 1
                }
            }
            bytes = result
        }
        return bytes
    }
}

/// What the runtime must do to one operation: the sum of the faults that fired on it.
public struct FaultPlan: Sendable, Equatable {
    public var fired: [FiredFault] = []
    /// Total delay before answering or sending, in milliseconds.
    public var delayMilliseconds = 0
    /// Never answer / don't send.
    public var drop = false
    public var error: ATTError?
    public var mutations: [ValueMutation] = []
    /// Extra copies of a notification.
    public var extraCopies = 0
    /// Hold the notification until the next one of the same characteristic.
    public var reorder = false
    public var disconnect = false
    /// Pairing: refuse it, or answer it wrongly.
    public var refusePairing = false
    public var wrongPasskey = false
    /// Adapter-level actions (silence, advertise, powerCycle), in order.
    public var adapterActions: [FaultAction] = []
    /// An SMP request: refuse it with this code of its group (the first fault's).
    public var smpError: Int?
    /// An upload: keep its image with a wrong hash.
    public var wrongHash = false
    /// A reset: lose the image pending in slot 1.
    public var losePending = false
    /// An L2CAP channel request: refuse it, result 0x0006 (the `refuse` kind, as for a pairing; a held refusal never fires).
    public var refuseChannel: Bool { refusePairing }
    /// An SDU: close its channel after it.
    public var closeChannel = false

    public var isEmpty: Bool { fired.isEmpty }

    /// `value` after every mutation, in order.
    public func mutate(_ value: [UInt8]) -> [UInt8] { mutated(value).bytes }

    /// `value` after every mutation, in order, and how many bytes were cut off results longer than `limit` (by default
    /// ``ATTMTU/maximumValueLength``, the ATT value limit).
    public func mutated(_ value: [UInt8], limit: Int = ATTMTU.maximumValueLength) -> (bytes: [UInt8], cut: Int) {
        mutations.reduce((value, 0)) { result, mutation in
            let next = mutation.applied(to: result.0, limit: limit)
            return (next.bytes, result.1 + next.cut)
        }
    }
}

/// Decides, per operation, which faults fire: pure and deterministic given the seeds and the operations.
///
/// The runtime asks ``plan(for:)`` where it handles each read, write, notification and connection and
/// applies the plan; the control API adds and removes faults. Each fault draws from its own generator
/// (its `seed`, else one derived from the run's seed and its id), so adding a fault does not change
/// the draws of another, and a run with the same operations replays exactly.
public struct FaultEngine: Sendable, Equatable {
    public private(set) var faults: [ActiveFault] = []
    let seed: UInt64
    var nextNumber = 1
    /// Notifications held back by `reorder`, by characteristic.
    var held: [CharacteristicID: [UInt8]] = [:]

    public init(seed: UInt64 = 0) {
        self.seed = seed
    }

    /// Installs a fault; its id is `spec.id` or the next free `fN`. Throws on a duplicate id.
    @discardableResult
    public mutating func add(_ spec: FaultSpec) throws(FaultSpecError) -> ActiveFault {
        let id: String
        if let given = spec.id {
            guard !faults.contains(where: { $0.id == given }) else {
                throw FaultSpecError(path: "id", message: "a fault with id \"\(given)\" already exists", kind: .conflict)
            }
            id = given
        } else {
            var candidate = "f\(nextNumber)"
            while faults.contains(where: { $0.id == candidate }) {
                nextNumber += 1
                candidate = "f\(nextNumber)"
            }
            id = candidate
            nextNumber += 1
        }
        var spec = spec
        spec.id = id
        let fault = ActiveFault(id: id, spec: spec, generator: SeededGenerator(seed: spec.scope.seed ?? Self.derivedSeed(seed, id)))
        faults.append(fault)
        return fault
    }

    /// Removes a fault; false when there is none with that id.
    public mutating func remove(id: String) -> Bool {
        guard let index = faults.firstIndex(where: { $0.id == id }) else { return false }
        faults.remove(at: index)
        return true
    }

    /// Removes every fault; returns the held-back notifications so the runtime can still send them.
    public mutating func removeAll() -> [(characteristic: CharacteristicID, value: [UInt8])] {
        faults = []
        defer { held = [:] }
        return held.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Whether a fault can still refuse or hold back a request for channel `channel` (`on: channel` with `refuse` or
    /// `delay`, scoped to that channel or to none, not used up), from any central: the runtime must then see each
    /// request before the central is answered.
    public func mayRefuseOrDelayRequests(forChannel channel: String) -> Bool {
        faults.contains { fault in
            guard Self.watchesRequests(fault, of: channel), !fault.exhausted else { return false }
            switch fault.spec.action {
            case .refuse(let refusal): return refusal?.isPerRequest ?? true
            case .delay: return true
            default: return false
            }
        }
    }

    /// The refusal the kernel must give every request for channel `channel` now, the first it checks of those the
    /// installed faults hold (``FaultAction/heldRefusal``), with the ids of the faults holding it; nil when none.
    /// Such faults never fire in ``plan(for:)``: the kernel answers before the runtime sees a request.
    public func heldRefusal(forChannel channel: String) -> (refusal: LECreditBasedChannel.Refusal, faults: [String])? {
        let holding = faults.filter { Self.watchesRequests($0, of: channel) && $0.spec.action.heldRefusal != nil }
        guard let refusal = holding.compactMap(\.spec.action.heldRefusal).max() else { return nil }
        return (refusal, holding.filter { $0.spec.action.heldRefusal == refusal }.map(\.id))
    }

    /// Whether `fault` is about requests for channel `channel` (`on: channel`, scoped to it or to none).
    private static func watchesRequests(_ fault: ActiveFault, of channel: String) -> Bool {
        fault.spec.on == .channel && (fault.spec.scope.channel.map { $0 == channel } ?? true)
    }

    /// Counts faults holding a refusal as fired once, when the listener first refuses for them (their listing's
    /// `fired`); the kernel does not say how many requests it refused.
    public mutating func noteHeld(_ ids: [String]) {
        for index in faults.indices where ids.contains(faults[index].id) && faults[index].fired == 0 {
            faults[index].matched = 1
            faults[index].fired = 1
        }
    }

    /// The faults that fire on `operation`, combined.
    public mutating func plan(for operation: FaultOperation) -> FaultPlan {
        var plan = FaultPlan()
        for index in faults.indices
        where faults[index].spec.on == operation.kind && faults[index].spec.action.heldRefusal == nil
            && matches(faults[index].spec.scope, operation)
        {
            faults[index].matched += 1
            let fault = faults[index]
            guard fault.matched >= fault.spec.scope.nth, !fault.exhausted else { continue }
            if fault.spec.scope.probability < 1 {
                let draw = Double(faults[index].generator.next() >> 11) / Double(1 << 53)
                guard draw < fault.spec.scope.probability else { continue }
            }
            faults[index].fired += 1
            plan.fired.append(resolve(index, operation, into: &plan))
        }
        return plan
    }

    /// Marks an `on: start` fault as fired (once); nil when it is gone or already fired.
    public mutating func fireStart(id: String) -> FiredFault? {
        guard let index = faults.firstIndex(where: { $0.id == id }), faults[index].spec.on == .start, faults[index].fired == 0 else {
            return nil
        }
        faults[index].matched += 1
        faults[index].fired += 1
        var plan = FaultPlan()
        return resolve(index, FaultOperation(.start), into: &plan)
    }

    /// The values to send now for a notification given its plan: mutated, duplicated, and reordered with
    /// any value held back earlier for the same characteristic. Empty when dropped or held back.
    public mutating func notificationValues(_ value: [UInt8], characteristic: CharacteristicID, plan: FaultPlan) -> [[UInt8]] {
        if plan.drop { return [] }
        let mutated = plan.mutate(value)
        if plan.reorder {
            // Holding a second one releases the first, so nothing is lost: they go out swapped.
            let earlier = held.removeValue(forKey: characteristic)
            held[characteristic] = mutated
            return earlier.map { [$0] } ?? []
        }
        var values = [[UInt8]](repeating: mutated, count: 1 + plan.extraCopies)
        if let earlier = held.removeValue(forKey: characteristic) { values.append(earlier) }
        return values
    }

    /// Characteristics with a notification held back by `reorder`.
    public var heldCharacteristics: [CharacteristicID] { held.keys.sorted() }

    // MARK: Internals

    func matches(_ scope: FaultScope, _ operation: FaultOperation) -> Bool {
        if let characteristic = scope.characteristic, characteristic != operation.characteristic { return false }
        if let central = scope.central, !operation.centrals.contains(central) {
            return false
        }
        if let percent = scope.percent, (operation.percent ?? -1) < percent { return false }
        if let channel = scope.channel, channel != operation.channel { return false }
        return true
    }

    private mutating func resolve(_ index: Int, _ operation: FaultOperation, into plan: inout FaultPlan) -> FiredFault {
        let fault = faults[index]
        var fired = FiredFault(id: fault.id, action: fault.spec.action, operation: operation, occurrence: fault.matched)
        switch fault.spec.action {
        case .delay(let min, let max):
            let ms = min == max ? min : min + Int(faults[index].generator.next() % UInt64(max - min + 1))
            fired.delayMilliseconds = ms
            plan.delayMilliseconds += ms
        case .drop:
            plan.drop = true
        case .error(let error):
            if plan.error == nil { plan.error = error }
        case .corrupt(let corruption):
            let mutation: ValueMutation =
                switch corruption {
                case .flipBits(let n): .flipBits((0..<n).map { _ in faults[index].generator.next() })
                case .replace(let at, let bytes): .replace(at: at, bytes: bytes)
                case .xor(let at, let mask): .xor(at: at, mask: mask)
                }
            fired.mutation = mutation
            plan.mutations.append(mutation)
        case .truncate(let keep):
            fired.mutation = .truncate(keep)
            plan.mutations.append(.truncate(keep))
        case .rewrite(let match, let replace, let all):
            fired.mutation = .rewrite(match: match, replace: replace, all: all)
            plan.mutations.append(.rewrite(match: match, replace: replace, all: all))
        case .duplicate(let copies):
            plan.extraCopies += copies
        case .reorder:
            plan.reorder = true
        case .disconnect:
            plan.disconnect = true
        case .silence, .advertise, .powerCycle, .forgetBonds:
            plan.adapterActions.append(fault.spec.action)
        case .refuse:
            plan.refusePairing = true
        case .wrongPasskey:
            plan.wrongPasskey = true
        case .smpError(let code):
            if plan.smpError == nil { plan.smpError = code }
        case .wrongHash:
            plan.wrongHash = true
        case .losePending:
            plan.losePending = true
        case .closeChannel:
            plan.closeChannel = true
        }
        return fired
    }

    /// FNV-1a of the id mixed with the run's seed.
    static func derivedSeed(_ seed: UInt64, _ id: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in id.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash ^ seed
    }
}
