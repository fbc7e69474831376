import Bluetooth

extension BehaviourEngine {
    /// A write to a characteristic with `frames`: joined to what the central wrote before, cut into whole frames,
    /// each handled as a write of its own (in order, their outcomes one after the other); the start of a frame
    /// is held for the next write. Bytes that cannot start a frame are handled as written. A write with
    /// response gets the first reply its frames produced (none: success).
    mutating func handleFrames(
        _ format: FrameFormat, characteristic id: CharacteristicID, central: CentralID, value: [UInt8], withResponse: Bool, limit: Int
    ) -> EngineOutcome {
        var rest = (heldFrames[central]?[id] ?? []) + value
        var pieces: [[UInt8]] = []
        scan: while !rest.isEmpty {
            switch format.head(of: rest[...], limit: limit) {
            case .notAFrame:
                pieces.append(rest)
                rest = []
            case .incomplete:
                break scan
            case .frame(let size):
                guard rest.count >= size else { break scan }
                pieces.append(Array(rest.prefix(size)))
                rest.removeFirst(size)
            }
        }
        heldFrames[central, default: [:]][id] = rest.isEmpty ? nil : rest
        if heldFrames[central]?.isEmpty == true { heldFrames[central] = nil }

        var outcome = EngineOutcome()
        var replied = false
        for piece in pieces {
            let one = handleOne(.write(characteristic: id, central: central, value: piece, withResponse: withResponse))
            outcome.firedRules += one.firedRules
            for effect in one.effects {
                if case .reply = effect {
                    if replied { continue }
                    replied = true
                }
                outcome.effects.append(effect)
            }
        }
        return outcome
    }
}
