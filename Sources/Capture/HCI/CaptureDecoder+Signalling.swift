import Bluetooth

/// L2CAP signalling: LE connection parameter updates and credit-based channel requests, and the BR/EDR
/// connection requests and responses that open channels for ATT.
extension CaptureDecoder {
    /// LE signalling: code, identifier, length, data (one command per PDU).
    mutating func decodeLESignalling(
        _ information: ArraySlice<UInt8>, connection: CaptureConnection, sender: HCIDirection,
        moment: CaptureMoment
    ) {
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
            guard let result = body.u16le() else {
                return report(.malformedSignalling(code: code, "response too short"), frame: moment.frame)
            }
            message = .connectionParameterUpdateResponse(accepted: result == 0)
        case 0x14, 0x17:
            guard let psm = body.u16le() else { return report(.malformedSignalling(code: code, "request too short"), frame: moment.frame) }
            message = .creditBasedConnectionRequest(psm: psm, enhanced: code == 0x17)
            // The requester receives on its source channels; data sent to it uses them.
            if code == 0x14, let source = body.u16le() {
                channelRequests[ChannelKey(connection: connection.id, sender: sender.opposite, channel: source)] = psm
                // The response names the responder's channel, on which the requester sends.
                if creditRequests.count < ChannelSDUAssembler.maximumChannels * 4 {
                    creditRequests[ChannelKey(connection: connection.id, sender: sender, channel: UInt16(identifier))] = (psm, source)
                }
            } else if code == 0x17, body.skip(6) {
                var count = 0
                while let source = body.u16le(), count < 5 {  // at most five channels a request (Core 5.2)
                    channelRequests[ChannelKey(connection: connection.id, sender: sender.opposite, channel: source)] = psm
                    count += 1
                }
                if creditRequests.count < ChannelSDUAssembler.maximumChannels * 4 {
                    creditRequests[ChannelKey(connection: connection.id, sender: sender, channel: UInt16(identifier))] = (psm, 0)
                }
            }
        case 0x15:
            guard let destination = body.u16le(), let mtu = body.u16le(), body.skip(4), let result = body.u16le() else {
                return report(.malformedSignalling(code: code, "response too short"), frame: moment.frame)
            }
            message = .creditBasedConnectionResponse(destination: destination, mtu: mtu, result: result)
            let request = ChannelKey(connection: connection.id, sender: sender.opposite, channel: UInt16(identifier))
            if let asked = creditRequests.removeValue(forKey: request) {
                if result == 0 {
                    channelRequests[ChannelKey(connection: connection.id, sender: sender.opposite, channel: destination)] = asked.psm
                } else {
                    // Refused: no channel on the requester's side either.
                    channelRequests[ChannelKey(connection: connection.id, sender: sender, channel: asked.source)] = nil
                }
            }
        case 0x18:
            // Enhanced credit-based response: MTU, MPS, credits, result, then the responder's channels, 0 for each
            // refused (so the result, "all" or "some refused", needs no reading).
            guard body.skip(8) else {
                return report(.malformedSignalling(code: code, "response too short"), frame: moment.frame)
            }
            message = .other(code: code)
            let request = ChannelKey(connection: connection.id, sender: sender.opposite, channel: UInt16(identifier))
            if let asked = creditRequests.removeValue(forKey: request) {
                var count = 0
                while let destination = body.u16le(), count < 5 {
                    if destination != 0 {
                        channelRequests[ChannelKey(connection: connection.id, sender: sender.opposite, channel: destination)] = asked.psm
                    }
                    count += 1
                }
            }
        default:
            message = .other(code: code)
        }
        pending.append(
            .signalling(
                L2CAPSignal(
                    frame: moment.frame, timestamp: moment.timestamp, connection: connection.id, sender: sender,
                    direction: direction(connection, sender), identifier: identifier, message: message)))
    }

    /// BR/EDR signalling, for the channels opened for ATT: Connection Request (PSM, source CID) and
    /// Connection Response (destination CID, source CID, result); several commands may share a PDU.
    mutating func decodeClassicSignalling(
        _ information: ArraySlice<UInt8>, connection: CaptureConnection, sender: HCIDirection,
        moment: CaptureMoment
    ) {
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
