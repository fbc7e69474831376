/// How a container wraps each HCI packet: the part of reading shared by btsnoop, pcap and pcapng.
enum Encapsulation: Sendable, Hashable {
    /// btsnoop 1001: bare HCI packet, kind and direction in the record flags.
    case hciWithFlags
    /// btsnoop 1002: H4 type byte first, direction in the record flags.
    case h4
    /// Linktype 187: H4 type byte first, no direction.
    case h4WithoutDirection
    /// Linktype 201: a 4-byte big-endian direction word (bit 0 set: received), then H4.
    case h4WithDirectionHeader
    /// btsnoop 2001: bare packet, adapter index and monitor opcode in the record flags.
    case monitorWithFlags
    /// Linktype 254: a 4-byte header (adapter index, opcode; both 16-bit big-endian), then the packet.
    case monitorWithHeader

    /// What one record holds, unwrapped.
    struct Unwrapped {
        var kind: HCIPacketKind
        var direction: HCIDirection
        var controller: UInt16?
        var payload: ArraySlice<UInt8>
        var originalLength: Int
    }

    /// Unwraps `data` (what the record included, `originalLength` before any truncation); `flags` is the
    /// btsnoop record flags word. A problem comes with a nil record when nothing usable is left.
    func unwrap(_ data: ArraySlice<UInt8>, originalLength: Int, flags: UInt32) -> (Unwrapped?, CaptureProblem.Reason?) {
        switch self {
        case .hciWithFlags:
            let received = flags & 1 != 0
            let kind: HCIPacketKind = flags & 2 != 0 ? (received ? .event : .command) : .acl
            return (
                Unwrapped(
                    kind: kind, direction: received ? .controllerToHost : .hostToController, controller: nil,
                    payload: data, originalLength: originalLength), nil
            )
        case .h4:
            return Self.unwrapH4(data, originalLength: originalLength, direction: flags & 1 != 0 ? .controllerToHost : .hostToController)
        case .h4WithoutDirection:
            return Self.unwrapH4(data, originalLength: originalLength, direction: .unknown)
        case .h4WithDirectionHeader:
            var cursor = ByteCursor(data)
            guard let word = cursor.u32(bigEndian: true) else {
                return (nil, .shortPacket(what: "H4 direction header", needed: 4, available: data.count))
            }
            return Self.unwrapH4(
                cursor.rest(), originalLength: originalLength - 4,
                direction: word & 1 != 0 ? .controllerToHost : .hostToController)
        case .monitorWithFlags:
            return Self.unwrapMonitor(data, originalLength: originalLength, index: UInt16(flags >> 16), opcode: UInt16(flags & 0xFFFF))
        case .monitorWithHeader:
            var cursor = ByteCursor(data)
            guard let index = cursor.u16be(), let opcode = cursor.u16be() else {
                return (nil, .shortPacket(what: "Linux monitor header", needed: 4, available: data.count))
            }
            return Self.unwrapMonitor(cursor.rest(), originalLength: originalLength - 4, index: index, opcode: opcode)
        }
    }

    private static func unwrapH4(_ data: ArraySlice<UInt8>, originalLength: Int, direction: HCIDirection) -> (
        Unwrapped?, CaptureProblem.Reason?
    ) {
        guard let type = data.first else { return (nil, .emptyRecord) }
        let kind: HCIPacketKind
        var direction = direction
        switch type {
        case 0x01:
            kind = .command
            if direction == .unknown { direction = .hostToController }
        case 0x02: kind = .acl
        case 0x03: kind = .sco
        case 0x04:
            kind = .event
            if direction == .unknown { direction = .controllerToHost }
        case 0x05: kind = .iso
        default: return (nil, .unknownPacketType(type))
        }
        return (
            Unwrapped(
                kind: kind, direction: direction, controller: nil, payload: data.dropFirst(),
                originalLength: max(originalLength - 1, data.count - 1)), nil
        )
    }

    private static func unwrapMonitor(_ data: ArraySlice<UInt8>, originalLength: Int, index: UInt16, opcode: UInt16) -> (
        Unwrapped?, CaptureProblem.Reason?
    ) {
        var problem: CaptureProblem.Reason?
        let kind: HCIPacketKind
        let direction: HCIDirection
        switch opcode {
        case 2:
            kind = .command
            direction = .hostToController
        case 3:
            kind = .event
            direction = .controllerToHost
        case 4:
            kind = .acl
            direction = .hostToController
        case 5:
            kind = .acl
            direction = .controllerToHost
        case 6:
            kind = .sco
            direction = .hostToController
        case 7:
            kind = .sco
            direction = .controllerToHost
        case 18:
            kind = .iso
            direction = .hostToController
        case 19:
            kind = .iso
            direction = .controllerToHost
        default:
            direction = .controllerToHost
            let (record, reason) = MonitorRecord.decode(opcode: opcode, data)
            kind = .monitor(record)
            problem = reason
        }
        return (
            Unwrapped(
                kind: kind, direction: direction, controller: index, payload: data,
                originalLength: max(originalLength, data.count)), problem
        )
    }
}

extension MonitorRecord {
    /// Decodes the monitor records that are not HCI packets (BlueZ `monitor/` formats: New Index is type,
    /// bus, address, 8-byte name; Index Info address and manufacturer; notes NUL-terminated text).
    static func decode(opcode: UInt16, _ data: ArraySlice<UInt8>) -> (MonitorRecord, CaptureProblem.Reason?) {
        var cursor = ByteCursor(data)
        switch opcode {
        case 0:
            guard let type = cursor.u8(), let bus = cursor.u8(), let address = cursor.address(), let name = cursor.take(8) else {
                return (.other(opcode: opcode), .shortPacket(what: "monitor New Index", needed: 16, available: data.count))
            }
            return (.newIndex(type: type, bus: bus, address: address, name: text(name)), nil)
        case 1: return (.deleteIndex, nil)
        case 8: return (.openIndex, nil)
        case 9: return (.closeIndex, nil)
        case 10:
            guard let address = cursor.address(), let manufacturer = cursor.u16le() else {
                return (.other(opcode: opcode), .shortPacket(what: "monitor Index Info", needed: 8, available: data.count))
            }
            return (.indexInfo(address: address, manufacturer: manufacturer), nil)
        case 11: return (.vendorDiagnostic, nil)
        case 12: return (.systemNote(text(data)), nil)
        case 13:
            guard let priority = cursor.u8(), let identLength = cursor.u8(), let ident = cursor.take(Int(identLength)) else {
                return (.other(opcode: opcode), .shortPacket(what: "monitor User Logging", needed: 2, available: data.count))
            }
            return (.userLogging(priority: priority, ident: text(ident), message: text(cursor.rest())), nil)
        default: return (.other(opcode: opcode), nil)
        }
    }

    /// Text up to the first NUL, UTF-8 with invalid sequences replaced; at most 256 bytes.
    private static func text(_ bytes: ArraySlice<UInt8>) -> String {
        let end = bytes.firstIndex(of: 0) ?? bytes.endIndex
        return String(decoding: bytes[bytes.startIndex..<min(end, bytes.startIndex + 256)], as: UTF8.self)
    }
}
