import Bluetooth

/// A request and what answered it: its response, an Error Response naming it, or nothing. Indications
/// pair with confirmations the same way.
///
/// ATT allows one outstanding request per direction on a bearer, so a response answers the last request
/// the other side sent on the same connection.
public struct ATTTransaction: Sendable, Hashable {
    /// A request, or an indication.
    public var request: ATTPDU
    /// The response, Error Response or confirmation; nil when unanswered.
    public var response: ATTPDU?
    public var outcome: Outcome

    /// How the request ended.
    public enum Outcome: Sendable, Hashable {
        case answered
        case error(ATTErrorCode)
        case unanswered(Unanswered)
    }

    /// Why a request has no answer in the capture.
    public enum Unanswered: Sendable, Hashable {
        /// The capture ended first.
        case captureEnded
        /// The connection ended first.
        case disconnected
        /// The same side sent another request first (a lost or filtered response).
        case superseded
    }

    public var connection: Int { request.connection }
}

extension ATTTransaction {
    /// The type a Read By Type or Read By Group Type request asked for: what the response's values are.
    public var requestedType: BluetoothUUID? {
        switch request.message {
        case .readByTypeRequest(_, let type), .readByGroupTypeRequest(_, let type): type
        default: nil
        }
    }

    /// An answered Read By Type for 0x2803: the characteristic declarations it returned.
    public var characteristicDeclarations: [ATTMessage.CharacteristicDeclaration] {
        guard outcome == .answered, requestedType == .characteristic, case .readByTypeResponse(let entries)? = response?.message else {
            return []
        }
        return entries.compactMap(\.characteristicDeclaration)
    }

    /// An answered Read By Type for 0x2802: the include declarations it returned.
    public var includeDeclarations: [ATTMessage.IncludeDeclaration] {
        guard outcome == .answered, requestedType == .include, case .readByTypeResponse(let entries)? = response?.message else { return [] }
        return entries.compactMap(\.includeDeclaration)
    }
}
