import Bluetooth

/// Pairs ATT requests with responses and indications with confirmations, per connection and sending side.
struct ATTPairing {
    private struct Key: Hashable {
        var connection: Int
        /// The side that sent the request (HCI direction; `.unknown` when the format has none).
        var requester: HCIDirection
        var indication: Bool
    }

    private var outstanding: [Key: ATTPDU] = [:]

    /// Feeds one PDU; returns the transactions it completes or supersedes, and a problem for a response
    /// nothing asked for.
    mutating func add(_ pdu: ATTPDU, _ emit: (ATTTransaction) -> Void) -> CaptureProblem.Reason? {
        switch pdu.opcode.kind {
        case .request, .indication:
            let key = Key(connection: pdu.connection, requester: pdu.sender, indication: pdu.opcode.kind == .indication)
            if let previous = outstanding.updateValue(pdu, forKey: key) {
                emit(ATTTransaction(request: previous, response: nil, outcome: .unanswered(.superseded)))
            }
            return nil
        case .response, .confirmation:
            let key = Key(connection: pdu.connection, requester: pdu.sender.opposite, indication: pdu.opcode.kind == .confirmation)
            guard let request = outstanding[key] else {
                return .unmatchedResponse(
                    opcode: pdu.opcode.rawValue, "answers no outstanding \(key.indication ? "indication" : "request")")
            }
            if pdu.opcode == .errorResponse {
                guard let named = pdu.parameters.first, named == request.opcode.rawValue else {
                    return .unmatchedResponse(
                        opcode: pdu.opcode.rawValue,
                        "names request 0x\(Hex.byte(pdu.parameters.first ?? 0)), but 0x\(Hex.byte(request.opcode.rawValue)) is outstanding")
                }
                outstanding[key] = nil
                let code = pdu.parameters.count >= 4 ? ATTErrorCode(rawValue: pdu.parameters[3]) : ATTErrorCode(rawValue: 0)
                emit(ATTTransaction(request: request, response: pdu, outcome: .error(code)))
                return nil
            }
            guard key.indication || request.opcode.response == pdu.opcode else {
                return .unmatchedResponse(
                    opcode: pdu.opcode.rawValue, "does not answer the outstanding \(request.opcode) (frame \(request.frame))")
            }
            outstanding[key] = nil
            emit(ATTTransaction(request: request, response: pdu, outcome: .answered))
            return nil
        default:
            return nil
        }
    }

    /// Ends every outstanding request of `connection` (all when nil) as unanswered.
    mutating func flush(connection: Int?, _ reason: ATTTransaction.Unanswered, _ emit: (ATTTransaction) -> Void) {
        let keys = outstanding.keys.filter { connection == nil || $0.connection == connection }
            .sorted { outstanding[$0]!.frame < outstanding[$1]!.frame }
        for key in keys {
            emit(ATTTransaction(request: outstanding.removeValue(forKey: key)!, response: nil, outcome: .unanswered(reason)))
        }
    }
}
