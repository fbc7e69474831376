import Bluetooth

/// ACL data: reassembled into L2CAP PDUs, then dispatched by channel: ATT (CID 4), LE signalling (5),
/// SMP (6), BR/EDR signalling (1) and ATT over BR/EDR channels opened for PSM 0x001F; other channels are
/// noted, not decoded.
extension CaptureDecoder {
    mutating func decodeACL(_ record: HCIRecord, controller: UInt16, moment: CaptureMoment) {
        var cursor = ByteCursor(record.payload)
        guard let word = cursor.u16le(), let length = cursor.u16le() else {
            if !record.isTruncated {
                report(.shortPacket(what: "ACL header", needed: 4, available: record.payload.count), frame: moment.frame)
            }
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
        let (complete, problems) = reassembler.add(data, boundary: boundary, stream: stream, frame: moment.frame)
        for problem in problems {
            if case .reassemblyLimit = problem {
                note(.reassemblyLimited(streams: ACLReassembler.streamLimit, bytes: ACLReassembler.byteLimit))
            }
            report(problem, frame: moment.frame)
        }
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
            pending.append(
                .smp(
                    SMPPDU(
                        frame: moment.frame, timestamp: moment.timestamp, connection: connection.id, sender: sender,
                        direction: direction(connection, sender), message: message)))
        case (.le, L2CAPChannel.leSignalling):
            decodeLESignalling(information, connection: connection, sender: sender, moment: moment)
        case (.bredr, L2CAPChannel.classicSignalling):
            decodeClassicSignalling(information, connection: connection, sender: sender, moment: moment)
        case (_, L2CAPChannel.firstDynamic...):
            let key = ChannelKey(connection: connection.id, sender: sender, channel: channel)
            if let psm = channels[key], psm == L2CAPPSM.att {
                decodeATT(information, connection: connection, channel: channel, sender: sender, firstFrame: pdu.firstFrame, moment: moment)
            } else if connection.link == .le, let psm = channelRequests[key], psm != L2CAPPSM.eatt {
                decodeChannelFrame(information, connection: connection, channel: channel, psm: psm, sender: sender, moment: moment)
            } else if connection.link == .le,
                undecodedChannels.insert(ChannelKey(connection: connection.id, sender: .unknown, channel: channel)).inserted
            {
                note(
                    .undecodedChannel(
                        connection: connection.id, channel: channel, psm: channels[key] ?? channelRequests[key], frame: moment.frame))
            }
        default:
            break
        }
    }

    /// A K-frame of an app's LE credit-based channel: an SDU once its frames are all there.
    private mutating func decodeChannelFrame(
        _ information: ArraySlice<UInt8>, connection: CaptureConnection, channel: UInt16, psm: UInt16, sender: HCIDirection,
        moment: CaptureMoment
    ) {
        let key = ChannelKey(connection: connection.id, sender: sender, channel: channel)
        switch channelSDUs.add(information, key: key) {
        case .sdu(let value):
            pending.append(
                .channelSDU(
                    ChannelSDU(
                        frame: moment.frame, timestamp: moment.timestamp, connection: connection.id, sender: sender,
                        direction: direction(connection, sender), psm: psm, channel: channel, value: value)))
        case .incomplete:
            break
        case .malformed(let why):
            report(.malformedChannelFrame(channel: channel, why), frame: moment.frame)
        case .tooManyChannels:
            report(
                .malformedChannelFrame(channel: channel, "more than \(ChannelSDUAssembler.maximumChannels) channels mid-SDU at once"),
                frame: moment.frame)
        }
    }

    func direction(_ connection: CaptureConnection, _ sender: HCIDirection) -> LinkDirection {
        connection.localRole?.direction(of: sender) ?? .unknown
    }
}
