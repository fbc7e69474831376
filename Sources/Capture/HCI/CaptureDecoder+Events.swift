import Bluetooth

/// HCI events and commands: connections, encryption, controller addresses and names, advertising.
extension CaptureDecoder {
    mutating func decodeEvent(_ record: HCIRecord, controller: UInt16, moment: CaptureMoment) {
        var cursor = ByteCursor(record.payload)
        guard let code = cursor.u8(), let length = cursor.u8() else {
            if !record.isTruncated {
                report(.shortPacket(what: "HCI event", needed: 2, available: record.payload.count), frame: moment.frame)
            }
            return
        }
        guard let parameters = cursor.take(Int(length)) else {
            if !record.isTruncated {
                report(
                    .lengthMismatch(what: "HCI event 0x\(Hex.byte(code))", declared: Int(length), actual: cursor.remaining),
                    frame: moment.frame)
            }
            return
        }
        var body = ByteCursor(parameters)
        switch code {
        case 0x03: connectionComplete(&body, controller: controller, moment: moment)
        case 0x05: disconnectionComplete(&body, controller: controller, moment: moment)
        case 0x08, 0x59: encryptionChange(&body, code: code, controller: controller, moment: moment)
        case 0x30: keyRefresh(&body, controller: controller, moment: moment)
        case 0x0E: commandComplete(&body, controller: controller, moment: moment)
        case 0x3E: leMeta(&body, controller: controller, moment: moment)
        default: break
        }
    }

    private mutating func malformed(_ code: UInt8, _ what: String, _ moment: CaptureMoment) {
        report(.malformedEvent(code: code, what), frame: moment.frame)
    }

    /// BR/EDR Connection Complete: status, handle, address, link type (1 = ACL), encryption.
    private mutating func connectionComplete(_ body: inout ByteCursor, controller: UInt16, moment: CaptureMoment) {
        guard let status = body.u8(), let handle = body.u16le(), let address = body.address(), let linkType = body.u8() else {
            return malformed(0x03, "Connection Complete too short", moment)
        }
        guard linkType == 0x01 else { return }  // SCO and eSCO links carry no ACL data
        let peer = DeviceAddress(address, type: .public)
        guard status == 0 else {
            pending.append(
                .connectionFailed(
                    ConnectionAttempt(
                        moment: moment, controller: controller, status: HCIStatus(rawValue: status),
                        peer: peer, link: .bredr)))
            return
        }
        // The event has no role: as for ACL-only connections, ATT discovery tells the client (taken as central).
        _ = openConnection(
            controller: controller, handle: handle & 0x0FFF, link: .bredr, origin: .classicConnectionComplete,
            peer: peer, role: nil, roleInferred: true, moment: moment)
    }

    private mutating func disconnectionComplete(_ body: inout ByteCursor, controller: UInt16, moment: CaptureMoment) {
        guard let status = body.u8(), let handle = body.u16le(), let reason = body.u8() else {
            return malformed(0x05, "Disconnection Complete too short", moment)
        }
        guard status == 0 else { return }
        close(HandleKey(controller: controller, handle: handle & 0x0FFF), reason: HCIStatus(rawValue: reason), moment: moment)
    }

    private mutating func encryptionChange(_ body: inout ByteCursor, code: UInt8, controller: UInt16, moment: CaptureMoment) {
        guard let status = body.u8(), let handle = body.u16le(), let enabled = body.u8() else {
            return malformed(code, "Encryption Change too short", moment)
        }
        let keySize = code == 0x59 ? body.u8() : nil
        update(HandleKey(controller: controller, handle: handle & 0x0FFF)) {
            $0.encryption.append(EncryptionChange(moment: moment, status: HCIStatus(rawValue: status), enabled: enabled, keySize: keySize))
        }
    }

    private mutating func keyRefresh(_ body: inout ByteCursor, controller: UInt16, moment: CaptureMoment) {
        guard let status = body.u8(), let handle = body.u16le() else {
            return malformed(0x30, "Encryption Key Refresh Complete too short", moment)
        }
        update(HandleKey(controller: controller, handle: handle & 0x0FFF)) {
            $0.encryption.append(EncryptionChange(moment: moment, status: HCIStatus(rawValue: status), enabled: nil, keySize: nil))
        }
    }

    /// Command Complete: the controller's public address (Read BD_ADDR) and local name (Read Local Name).
    private mutating func commandComplete(_ body: inout ByteCursor, controller: UInt16, moment: CaptureMoment) {
        guard body.u8() != nil, let opcode = body.u16le() else { return malformed(0x0E, "Command Complete too short", moment) }
        switch opcode {
        case 0x1009:
            guard body.u8() == 0, let address = body.address() else { return }
            controllerInfo(controller) { $0.publicAddress = address }
        case 0x0C14:
            guard body.u8() == 0 else { return }
            let bytes = body.rest()
            let name = String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
            controllerInfo(controller) { $0.localName = name }
        default:
            break
        }
    }

    private mutating func leMeta(_ body: inout ByteCursor, controller: UInt16, moment: CaptureMoment) {
        guard let subevent = body.u8() else { return malformed(0x3E, "LE Meta event without a subevent", moment) }
        switch subevent {
        case 0x01, 0x0A, 0x29: leConnectionComplete(&body, subevent: subevent, controller: controller, moment: moment)
        case 0x02, 0x0B, 0x0D: advertisingReports(&body, subevent: subevent, controller: controller, moment: moment)
        case 0x03:
            guard let status = body.u8(), let handle = body.u16le(), let interval = body.u16le(), let latency = body.u16le(),
                let timeout = body.u16le()
            else { return malformed(0x3E, "LE Connection Update Complete too short", moment) }
            guard status == 0 else { return }
            update(HandleKey(controller: controller, handle: handle & 0x0FFF)) {
                $0.interval = interval
                $0.peripheralLatency = latency
                $0.supervisionTimeout = timeout
            }
        default:
            break
        }
    }

    /// LE (Enhanced) Connection Complete: status, handle, role, peer address type and address, (local and
    /// peer resolvable private addresses,) interval, latency, supervision timeout.
    private mutating func leConnectionComplete(_ body: inout ByteCursor, subevent: UInt8, controller: UInt16, moment: CaptureMoment) {
        let enhanced = subevent != 0x01
        guard let status = body.u8(), let handle = body.u16le(), let role = body.u8(), let peerType = body.u8(),
            let address = body.address()
        else {
            return malformed(0x3E, "LE Connection Complete (subevent 0x\(Hex.byte(subevent))) too short", moment)
        }
        var peerRPA: BluetoothAddress?
        if enhanced {
            guard body.skip(6), let rpa = body.address() else {
                return malformed(0x3E, "LE Enhanced Connection Complete too short", moment)
            }
            if rpa != .zero { peerRPA = rpa }
        }
        let interval = body.u16le()
        let latency = body.u16le()
        let timeout = body.u16le()
        let peer = DeviceAddress(address, hciType: peerType)
        // The attempt has ended either way: a link seen later without its event is not this one.
        createTargets[controller] = nil
        guard status == 0 else {
            pending.append(
                .connectionFailed(
                    ConnectionAttempt(
                        moment: moment, controller: controller, status: HCIStatus(rawValue: status),
                        peer: address == .zero ? nil : peer, link: .le)))
            return
        }
        _ = openConnection(
            controller: controller, handle: handle & 0x0FFF, link: .le,
            origin: enhanced ? .leEnhancedConnectionComplete : .leConnectionComplete,
            peer: peer, role: ConnectionRole(rawValue: role), moment: moment
        ) {
            $0.peerResolvablePrivateAddress = peerRPA
            $0.interval = interval
            $0.peripheralLatency = latency
            $0.supervisionTimeout = timeout
        }
    }

    mutating func decodeCommand(_ record: HCIRecord, controller: UInt16, moment: CaptureMoment) {
        var cursor = ByteCursor(record.payload)
        guard let opcode = cursor.u16le(), let length = cursor.u8() else {
            if !record.isTruncated {
                report(.shortPacket(what: "HCI command", needed: 3, available: record.payload.count), frame: moment.frame)
            }
            return
        }
        guard let parameters = cursor.take(Int(length)) else {
            if !record.isTruncated {
                report(
                    .lengthMismatch(what: "HCI command 0x\(Hex.word(opcode))", declared: Int(length), actual: cursor.remaining),
                    frame: moment.frame)
            }
            return
        }
        var body = ByteCursor(parameters)
        switch opcode {
        case 0x0C03:  // Reset: the controller drops every connection
            closeAll(controller: controller, moment: moment)
            for problem in reassembler.drop(controller: controller, handle: nil) { report(problem, frame: moment.frame) }
        case 0x2005:  // LE Set Random Address
            guard let address = body.address() else { return report(.malformedCommand(opcode: opcode, "too short"), frame: moment.frame) }
            controllerInfo(controller) { $0.randomAddress = address }
        // The peer a link made up from ACL data is given when its connection-complete event is missing. Only
        // filter policy 0 names one: with the accept list (1, and later versions' 2 and 3) the controller connects
        // to whichever listed device answers and ignores the address (iPhones send zeros).
        case 0x200D:  // LE Create Connection: scan interval, window, filter policy, peer type, peer address, …
            guard body.skip(4), let policy = body.u8(), let type = body.u8(), let address = body.address() else {
                return report(.malformedCommand(opcode: opcode, "too short"), frame: moment.frame)
            }
            createTargets[controller] = policy == 0 ? DeviceAddress(address, hciType: type) : nil
        case 0x2043:  // LE Extended Create Connection: filter policy, own type, peer type, peer address, …
            guard let policy = body.u8(), body.skip(1), let type = body.u8(), let address = body.address() else {
                return report(.malformedCommand(opcode: opcode, "too short"), frame: moment.frame)
            }
            createTargets[controller] = policy == 0 ? DeviceAddress(address, hciType: type) : nil
        default:
            break
        }
    }
}
