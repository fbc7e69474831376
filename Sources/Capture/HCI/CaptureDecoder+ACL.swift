import Bluetooth

/// ACL data: reassembled into L2CAP PDUs, then ATT (CID 4), LE signalling (5), SMP (6), and ATT over
/// BR/EDR channels opened for PSM 0x001F; other channels are noted, not decoded.
extension CaptureDecoder {
    mutating func decodeACL(_ record: HCIRecord, controller: UInt16, moment: CaptureMoment) {
        var cursor = ByteCursor(record.payload)
        guard let word = cursor.u16le(), let length = cursor.u16le() else {
            if !record.isTruncated { report(.shortPacket(what: "ACL header", needed: 4, available: record.payload.count), frame: moment.frame) }
            return
        }
        let handle = word & 0x0FFF
        let boundary = UInt8((word >> 12) & 0b11)
        if Self.isVendorHandle(handle) {
            if ignoredHandles.insert(HandleKey(controller: controller, handle: handle)).inserted {
                note(.vendorHandle(controller: controller, handle: handle, frame: moment.frame))
            }
            return
        }
        let stream = ACLReassembler.Stream(controller: controller, handle: handle, direction: record.direction)
        if record.direction == .unknown && !sawUnknownDirection {
            sawUnknownDirection = true
            note(.noACLDirection)
        }
        var data = cursor.rest()
        if data.count < Int(length) {
            if record.isTruncated {
                // A filtered log kept only the start: nothing on this stream can be trusted until the next start.
                reassembler.discard(stream)
            } else {
                report(.lengthMismatch(what: "ACL data", declared: Int(length), actual: data.count), frame: moment.frame)
            }
            return
        }
        if data.count > Int(length) {
            report(.lengthMismatch(what: "ACL data", declared: Int(length), actual: data.count), frame: moment.frame)
            data = data.prefix(Int(length))
        }
        let (complete, problem) = reassembler.add(data, boundary: boundary, stream: stream, frame: moment.frame)
        if let problem { report(problem, frame: moment.frame) }
        guard let complete else { return }
        decodeL2CAP(complete, key: HandleKey(controller: controller, handle: handle), sender: record.direction, moment: moment)
    }

    /// Handles that carry controller diagnostics, not connections: above 0x0EFF (reserved by the spec;
    /// Broadcom logs on 0x0FF1) and Qualcomm's debug-log handle 0x0EDC.
    static func isVendorHandle(_ handle: UInt16) -> Bool { handle > 0x0EFF || handle == 0x0EDC }

    private mutating func decodeL2CAP(_ pdu: ACLReassembler.Complete, key: HandleKey, sender: HCIDirection, moment: CaptureMoment) {
        var cursor = ByteCursor(pdu.bytes)
        let length = Int(cursor.u16le()!)
        let channel = cursor.u16le()!
        let information = cursor.rest().prefix(length)
        guard let connection = connectionForData(key, channel: channel, moment: moment) else { return }
        switch (connection.link, channel) {
        case (.le, L2CAPChannel.att):
            decodeATT(information, connection: connection, channel: channel, sender: sender, firstFrame: pdu.firstFrame, moment: moment)
        case (.le, L2CAPChannel.smp):
            let message = SMPMessage(information)
            if case .malformed(let code, let reason) = message { report(.malformedSMP(code: code, reason), frame: moment.frame) }
            pending.append(.smp(SMPPDU(frame: moment.frame, timestamp: moment.timestamp, connection: connection.id, sender: sender,
                                       direction: direction(connection, sender), message: message)))
        case (.le, L2CAPChannel.leSignalling):
            decodeLESignalling(information, connection: connection, sender: sender, moment: moment)
        case (.bredr, L2CAPChannel.classicSignalling):
            decodeClassicSignalling(information, connection: connection, sender: sender, moment: moment)
        case (_, L2CAPChannel.firstDynamic...):
            let key = ChannelKey(connection: connection.id, sender: sender, channel: channel)
            if let psm = channels[key], psm == L2CAPPSM.att {
                decodeATT(information, connection: connection, channel: channel, sender: sender, firstFrame: pdu.firstFrame, moment: moment)
            } else if connection.link == .le,
                      undecodedChannels.insert(ChannelKey(connection: connection.id, sender: .unknown, channel: channel)).inserted {
                note(.undecodedChannel(connection: connection.id, channel: channel, psm: channels[key] ?? channelRequests[key], frame: moment.frame))
            }
        default:
            break
        }
    }

    func direction(_ connection: CaptureConnection, _ sender: HCIDirection) -> LinkDirection {
        connection.localRole?.direction(of: sender) ?? .unknown
    }

    private mutating func decodeATT(_ information: ArraySlice<UInt8>, connection: CaptureConnection, channel: UInt16, sender: HCIDirection,
                                    firstFrame: Int, moment: CaptureMoment) {
        guard let opcodeByte = information.first else {
            return report(.malformedATT(opcode: 0, "empty ATT PDU"), frame: moment.frame)
        }
        let opcode = ATTOpcode(rawValue: opcodeByte)
        var connection = connection
        if connection.roleInferred, sender != .unknown, !settledRoles.contains(connection.id),
           [ATTOpcode.readByGroupTypeRequest, .findInformationRequest, .findByTypeValueRequest].contains(opcode) {
            // The side that discovers services is the client: taken as the central.
            settledRoles.insert(connection.id)
            let role: ConnectionRole = sender == .hostToController ? .central : .peripheral
            note(.roleInferred(connection: connection.id, role: role, evidenceFrame: moment.frame))
            if role != connection.localRole {
                update(HandleKey(controller: connection.controller, handle: connection.handle)) { $0.localRole = role }
                connection.localRole = role
            }
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
        let pdu = ATTPDU(frame: moment.frame, firstFrame: firstFrame, timestamp: moment.timestamp, connection: connection.id, sender: sender,
                         direction: linkDirection, channel: channel, opcode: opcode, parameters: Array(information.dropFirst()))
        statistics.attPDUs += 1
        pending.append(.att(pdu))
        if let problem = pairing.add(pdu, { pending.append(.attTransaction($0)) }) { report(problem, frame: moment.frame) }
    }

    /// LE signalling: code, identifier, length, data (one command per PDU).
    private mutating func decodeLESignalling(_ information: ArraySlice<UInt8>, connection: CaptureConnection, sender: HCIDirection,
                                             moment: CaptureMoment) {
        var cursor = ByteCursor(information)
        guard let code = cursor.u8(), let identifier = cursor.u8(), let length = cursor.u16le(), let data = cursor.take(Int(length)) else {
            return report(.malformedSignalling(code: information.first ?? 0, "shorter than its header says"), frame: moment.frame)
        }
        var body = ByteCursor(data)
        let message: L2CAPSignal.Message
        switch code {
        case 0x12:
            guard let low = body.u16le(), let high = body.u16le(), let latency = body.u16le(), let timeout = body.u16le() else {
                return report(.malformedSignalling(code: code, "connection parameter update request too short"), frame: moment.frame)
            }
            message = .connectionParameterUpdateRequest(intervalMin: low, intervalMax: high, latency: latency, timeout: timeout)
        case 0x13:
            guard let result = body.u16le() else { return report(.malformedSignalling(code: code, "response too short"), frame: moment.frame) }
            message = .connectionParameterUpdateResponse(accepted: result == 0)
        case 0x14, 0x17:
            guard let psm = body.u16le() else { return report(.malformedSignalling(code: code, "request too short"), frame: moment.frame) }
            message = .creditBasedConnectionRequest(psm: psm, enhanced: code == 0x17)
            // The requester receives on its source channels; data sent to it uses them.
            if code == 0x14, let source = body.u16le() {
                channelRequests[ChannelKey(connection: connection.id, sender: sender.opposite, channel: source)] = psm
            } else if code == 0x17, body.skip(6) {
                while let source = body.u16le() {
                    channelRequests[ChannelKey(connection: connection.id, sender: sender.opposite, channel: source)] = psm
                }
            }
        default:
            message = .other(code: code)
        }
        pending.append(.signalling(L2CAPSignal(frame: moment.frame, timestamp: moment.timestamp, connection: connection.id, sender: sender,
                                               direction: direction(connection, sender), identifier: identifier, message: message)))
    }

    /// BR/EDR signalling, for the channels opened for ATT: Connection Request (PSM, source CID) and
    /// Connection Response (destination CID, source CID, result); several commands may share a PDU.
    private mutating func decodeClassicSignalling(_ information: ArraySlice<UInt8>, connection: CaptureConnection, sender: HCIDirection,
                                                  moment: CaptureMoment) {
        var cursor = ByteCursor(information)
        while let code = cursor.u8() {
            guard cursor.skip(1), let length = cursor.u16le(), let data = cursor.take(Int(length)) else { return }
            var body = ByteCursor(data)
            switch code {
            case 0x02:
                guard let psm = body.u16le(), let source = body.u16le() else { continue }
                channelRequests[ChannelKey(connection: connection.id, sender: sender, channel: source)] = psm
            case 0x03:
                guard let destination = body.u16le(), let source = body.u16le(), let result = body.u16le(), result == 0 else { continue }
                let requester = sender.opposite
                guard let psm = channelRequests[ChannelKey(connection: connection.id, sender: requester, channel: source)] else { continue }
                // The requester sends to the responder's channel (destination), the responder to the requester's (source).
                channels[ChannelKey(connection: connection.id, sender: requester, channel: destination)] = psm
                channels[ChannelKey(connection: connection.id, sender: sender, channel: source)] = psm
            default:
                continue
            }
        }
    }
}
