import Bluetooth
import CaptureExport
import Foundation
import Replica
import Testing

/// tshark as the judge of an exported capture: it dissects every record without a malformed packet or a
/// warning, sees the discovery describe the replica's table, and the ATT PDUs after it are the conversation's,
/// byte for byte and in order. tshark is part of the machine's set-up (scripts/bootstrap); without it these
/// tests fail rather than pass unchecked.
@Suite struct WiresharkTests {
    /// One ATT PDU as tshark dissected it.
    struct PDU {
        var frame: Int
        var opcode: UInt8
        /// The PDU's bytes (tshark's `btatt_raw`), in lower-case hex.
        var hex: String
        /// tshark's `btatt` layer.
        var fields: [String: Any]
    }

    static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

    /// The PDUs of the relayed conversation, written out by hand from ``RelaySession`` (MTU 185).
    static func conversation() -> [[UInt8]] {
        let long = RelaySession.longValue
        let written = RelaySession.longWrite
        return [
            // Connection 1: the 300-byte value in two parts.
            [0x0A] + le16(17), [0x0B] + long[0..<184], [0x0C] + le16(17) + le16(184), [0x0D] + long[184...],
            [0x12] + le16(14) + [0x01, 0x00], [0x13],
            [0x12] + le16(11) + [0x01, 0x02], [0x13], [0x1B] + le16(13) + [0x51, 0x60], [0x1B] + le16(13) + [0x52],
            [0x12] + le16(11) + [0x01, 0x03], [0x13], [0x1B] + le16(13) + [0x53],
            [0x52] + le16(11) + [0xAA],
            [0x0A] + le16(13), [0x0B, 0x01],
            [0x0A] + le16(22), [0x01, 0x0A] + le16(22) + [0x05],
            [0x12] + le16(20) + [0x02, 0x00], [0x13],
            [0x1D] + le16(19) + [0xA1], [0x1E],
            [0x12] + le16(11) + [0x0F], [0x01, 0x12] + le16(11) + [0x03],
            // The 300-byte write: prepared in parts of MTU − 5.
            [0x16] + le16(17) + le16(0) + written[0..<180], [0x17] + le16(17) + le16(0) + written[0..<180],
            [0x16] + le16(17) + le16(180) + written[180...], [0x17] + le16(17) + le16(180) + written[180...],
            [0x18, 0x01], [0x19],
            // Connection 2.
            [0x02] + le16(185), [0x03] + le16(185),
            [0x0A] + le16(6), [0x0B, 87],
            [0x12] + le16(7) + [0x01, 0x00], [0x13], [0x1B] + le16(6) + [86],
            [0x12] + le16(11) + [0x01, 0x02], [0x13], [0x1B] + le16(13) + [0x51, 0x61],
        ]
    }

    @Test func tsharkSeesTheConversation() throws {
        let bytes = BTSnoopExport.write(RelaySession.replica(), central: RelaySession.phone, start: RelaySession.start).bytes
        let pdus = try Self.tshark(bytes)
        let expected = Self.conversation().map { Hex.string($0) }
        #expect(pdus.count > expected.count)
        let tail = pdus.suffix(expected.count)
        #expect(tail.map(\.hex) == expected)
        // Before it: the MTU exchange, the discovery, the read the device refuses for security (the secret's: its
        // level, known from the table's walk) and the reads of the values the conversation does not show.
        let discovery: Set<UInt8> = [0x02, 0x03, 0x04, 0x05, 0x08, 0x09, 0x10, 0x11, 0x0A, 0x0B]
        let before = pdus.prefix(pdus.count - expected.count)
        var refusals: [String] = []
        for pdu in before where !discovery.contains(pdu.opcode) {
            if pdu.opcode == 0x01, Self.byte(pdu.hex, 1) == 0x0A {
                refusals.append(pdu.hex)
                continue
            }
            // Otherwise only searches end in errors, and each with Attribute Not Found.
            #expect(
                pdu.opcode == 0x01 && [0x04, 0x08, 0x10].contains(Self.byte(pdu.hex, 1)) && Self.byte(pdu.hex, 4) == 0x0A,
                "frame \(pdu.frame)")
        }
        #expect(refusals == [Hex.string([0x01, 0x0A] + Self.le16(22) + [0x0F])], "insufficient encryption, before pairing")
        let reads = before.filter { $0.opcode == 0x0B }.map(\.hex)
        #expect(reads == [Hex.string([0x0B] + Array("RelayLock".utf8)), Hex.string([0x0B] + Array("Status".utf8))])
    }

    /// At MTU 517 a PDU takes more than one ACL packet (251 bytes each): tshark reassembles the same PDUs.
    @Test func tsharkReassemblesLongPDUs() throws {
        var replica = RelaySession.replica()
        replica.mtu = 517
        let notified = (0..<500).map { UInt8($0 % 199) }
        let written = (0..<512).map { UInt8($0 % 173) }
        replica.conversation = [
            DeviceReplica.Event(.read(handle: 17, offset: 0, value: RelaySession.longValue), time: 1),
            DeviceReplica.Event(.notification(handle: 13, value: notified, indication: false), time: 2),
            DeviceReplica.Event(.write(handle: 17, value: written, withResponse: true), time: 3),
        ]
        let output = BTSnoopExport.write(replica, central: RelaySession.phone, start: RelaySession.start)
        let pdus = try Self.tshark(output.bytes)
        let expected: [[UInt8]] = [
            [0x0A] + Self.le16(17), [0x0B] + RelaySession.longValue, [0x1B] + Self.le16(13) + notified,
            [0x12] + Self.le16(17) + written, [0x13],
        ]
        #expect(pdus.suffix(expected.count).map(\.hex) == expected.map { Hex.string($0) })
    }

    /// A write followed by the device's error for it is one request answered by the error (no Write Response);
    /// a long one fails at the part the device refused, or at the Execute Write.
    @Test func tsharkSeesRefusedWrites() throws {
        var replica = RelaySession.replica()
        let long = RelaySession.longWrite
        replica.conversation = [
            DeviceReplica.Event(.write(handle: 11, value: [9, 9], withResponse: true), time: 1),
            DeviceReplica.Event(.error(handle: 11, request: .writeRequest, code: .valueNotAllowed), time: 1.01),
            DeviceReplica.Event(.write(handle: 17, value: long, withResponse: true), time: 2),
            DeviceReplica.Event(.error(handle: 17, request: .prepareWriteRequest, code: .prepareQueueFull), time: 2.01),
            DeviceReplica.Event(.write(handle: 17, value: long, withResponse: true), time: 3),
            DeviceReplica.Event(.error(handle: 17, request: .executeWriteRequest, code: .invalidAttributeValueLength), time: 3.01),
        ]
        let output = BTSnoopExport.write(replica, central: RelaySession.phone, start: RelaySession.start)
        let pdus = try Self.tshark(output.bytes)
        let part: [UInt8] = Self.le16(17) + Self.le16(0) + long[0..<180]
        let rest: [UInt8] = Self.le16(17) + Self.le16(180) + long[180...]
        let expected: [[UInt8]] = [
            [0x12] + Self.le16(11) + [9, 9], [0x01, 0x12] + Self.le16(11) + [0x13],
            [0x16] + part, [0x01, 0x16] + Self.le16(17) + [0x09],
            [0x16] + part, [0x17] + part, [0x16] + rest, [0x17] + rest, [0x18, 0x01], [0x01, 0x18] + Self.le16(17) + [0x0D],
        ]
        #expect(pdus.suffix(expected.count).map(\.hex) == expected.map { Hex.string($0) })
    }

    /// The table tshark reads from the discovery responses is the replica's.
    @Test func tsharkSeesTheTable() throws {
        let replica = RelaySession.replica()
        let bytes = BTSnoopExport.write(replica, central: RelaySession.phone, start: RelaySession.start).bytes
        let pdus = try Self.tshark(bytes)
        var services: [String] = []
        var includes: [String] = []
        var characteristics: [String] = []
        var descriptors: [String] = []
        for pdu in pdus {
            let type = Self.strings(pdu.fields["btatt.uuid16"]).first
            for entry in Self.entries(pdu.fields["btatt.attribute_data"]) + Self.entries(pdu.fields["btatt.information_data"]) {
                let handles = Self.strings(entry["btatt.handle"]).compactMap(Self.number)
                let uuid = Self.uuid(entry)
                switch pdu.opcode {
                case 0x11:
                    let end = Self.strings(entry["btatt.group_end_handle"]).first.flatMap(Self.number) ?? -1
                    services.append("\(type == "0x2800" ? "primary" : "secondary") \(uuid) \(handles)-\(end)")
                case 0x09 where entry["btatt.characteristic_properties"] != nil:
                    let properties = Self.strings(entry["btatt.characteristic_properties"]).first.flatMap(Self.number) ?? -1
                    characteristics.append("\(uuid) \(handles) \(properties)")
                case 0x09 where entry["btatt.ending_handle"] != nil:
                    includes.append("\(handles)")
                case 0x05:
                    descriptors.append("\(uuid) \(handles)")
                default:
                    continue
                }
            }
        }
        let sorted = replica.services.sorted { ($0.isPrimary ? 0 : 1, $0.handle ?? 0) < ($1.isPrimary ? 0 : 1, $1.handle ?? 0) }
        #expect(
            services
                == sorted.map {
                    "\($0.isPrimary ? "primary" : "secondary") \($0.uuid) [\(Int($0.handle!.rawValue))]-\(Int($0.endHandle!.rawValue))"
                })
        #expect(includes == ["[9, 4]"])
        #expect(
            characteristics
                == replica.characteristics.map { item in
                    let c = item.characteristic
                    return
                        "\(c.uuid) [\(Int(c.declarationHandle!.rawValue)), \(Int(c.valueHandle!.rawValue))] \(Int(c.properties.rawValue))"
                })
        #expect(
            descriptors
                == replica.characteristics.flatMap { $0.characteristic.descriptors.map { "\($0.uuid) [\(Int($0.handle!.rawValue))]" } })
    }

    // MARK: tshark

    /// tshark's dissection of `bytes`, after checking that no packet is malformed or warned about.
    static func tshark(_ bytes: [UInt8]) throws -> [PDU] {
        let path = try Judge.file(bytes)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let complaints = try Judge.run(["tshark", "-r", path, "-Y", "_ws.malformed || _ws.expert.severity >= warning"])
        #expect(complaints.status == 0, "tshark exited \(complaints.status): it is needed here (scripts/bootstrap installs it)")
        #expect(complaints.stdout.isEmpty, "tshark complains:\n\(complaints.stdout)")
        let outcome = try Judge.run(["tshark", "-r", path, "-Y", "btatt", "-T", "json", "-x", "--no-duplicate-keys", "-J", "frame btatt"])
        try #require(outcome.status == 0, "tshark exited \(outcome.status): it is needed here (scripts/bootstrap installs it)")
        let packets = try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [[String: Any]] ?? []
        return packets.compactMap { packet in
            guard let layers = (packet["_source"] as? [String: Any])?["layers"] as? [String: Any],
                let frame = (layers["frame"] as? [String: Any])?["frame.number"] as? String, let number = Int(frame),
                let att = layers["btatt"] as? [String: Any], let opcode = strings(att["btatt.opcode"]).first.flatMap(Self.number),
                let raw = (layers["btatt_raw"] as? [Any])?.first as? String
            else { return nil }
            return PDU(frame: number, opcode: UInt8(opcode), hex: raw, fields: att)
        }
    }

    static func strings(_ value: Any?) -> [String] { (value as? [String]) ?? (value as? String).map { [$0] } ?? [] }

    static func entries(_ value: Any?) -> [[String: Any]] { (value as? [[String: Any]]) ?? (value as? [String: Any]).map { [$0] } ?? [] }

    /// A number as tshark writes it (`0x000b` or `184`).
    static func number(_ text: String) -> Int? { text.hasPrefix("0x") ? Int(text.dropFirst(2), radix: 16) : Int(text) }

    static func byte(_ hex: String, _ index: Int) -> UInt8? {
        let digits = Array(hex.utf8)
        guard digits.count >= 2 * index + 2 else { return nil }
        return UInt8(String(decoding: digits[(2 * index)..<(2 * index + 2)], as: UTF8.self), radix: 16)
    }

    /// An entry's UUID as ``BluetoothUUID`` prints it: tshark gives 16-bit ones as `0x2a19`, 128-bit ones as their
    /// bytes least significant first with colons.
    static func uuid(_ entry: [String: Any]) -> String {
        if let short = strings(entry["btatt.uuid16"]).last.flatMap(number) { return BluetoothUUID(UInt16(short)).description }
        if let long = strings(entry["btatt.uuid128"]).first {
            let bytes = long.split(separator: ":").compactMap { UInt8($0, radix: 16) }
            return BluetoothUUID(littleEndian: bytes)?.description ?? long
        }
        return "?"
    }
}
