import Bluetooth

/// ATT PDUs: the role inferred where no event gave it, the direction, the typed PDU, and its pairing
/// with what answers it.
extension CaptureDecoder {
    mutating func decodeATT(
        _ information: ArraySlice<UInt8>, connection: CaptureConnection, channel: UInt16, sender: HCIDirection,
        firstFrame: Int, moment: CaptureMoment
    ) {
        guard let opcodeByte = information.first else {
            return report(.malformedATT(opcode: 0, "empty ATT PDU"), frame: moment.frame)
        }
        let opcode = ATTOpcode(rawValue: opcodeByte)
        var connection = connection
        if connection.roleInferred, sender != .unknown, !settledRoles.contains(connection.id),
            [ATTOpcode.readByGroupTypeRequest, .findInformationRequest, .findByTypeValueRequest].contains(opcode)
        {
            // The side that discovers services is the client: taken as the central.
            settledRoles.insert(connection.id)
            let role: ConnectionRole = sender == .hostToController ? .central : .peripheral
            if role != connection.localRole {
                update(HandleKey(controller: connection.controller, handle: connection.handle)) { $0.localRole = role }
                connection.localRole = role
            }
            // After the update: the trace relabels what came before, then forgets the connection was unsettled.
            note(.roleInferred(connection: connection.id, role: role, evidenceFrame: moment.frame))
        }
        var linkDirection = direction(connection, sender)
        if sender == .unknown {
            // No HCI direction: requests, commands and confirmations come from the client, taken as the central.
            switch opcode.kind {
            case .request, .command, .confirmation: linkDirection = .centralToPeripheral
            case .response, .notification, .indication: linkDirection = .peripheralToCentral
            case .unknown: linkDirection = .unknown
            }
        }
        let pdu = ATTPDU(
            frame: moment.frame, firstFrame: firstFrame, timestamp: moment.timestamp, connection: connection.id, sender: sender,
            direction: linkDirection, channel: channel, opcode: opcode, parameters: Array(information.dropFirst()))
        statistics.attPDUs += 1
        pending.append(.att(pdu))
        if let problem = pairing.add(pdu, { pending.append(.attTransaction($0)) }) { report(problem, frame: moment.frame) }
    }
}
