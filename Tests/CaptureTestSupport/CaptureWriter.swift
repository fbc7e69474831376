import Capture
import CaptureExport

/// Writes synthetic capture files, byte for byte as btsnoop, pcap, pcapng and PacketLogger writers do, for tests,
/// fuzz seeds and the benchmark.
public enum CaptureWriter {
    /// btsnoop's year-0 epoch, in microseconds before the Unix epoch.
    public static let btsnoopEpochOffset = BTSnoopFile.epochOffset

    /// A btsnoop file: datalink 1001 (bare HCI, kind in the flags), 1002 (H4) or 2001 (Linux monitor).
    public static func btsnoop(_ packets: [CapturePacket], datalink: UInt32 = BTSnoopFile.h4Datalink) -> [UInt8] {
        var out = BTSnoopFile.header(datalink: datalink)
        for packet in packets { appendBTSnoopRecord(packet, datalink: datalink, to: &out) }
        return out
    }

    /// Appends one btsnoop record (for writers that stream, like the benchmark's).
    public static func appendBTSnoopRecord(_ packet: CapturePacket, datalink: UInt32, to out: inout [UInt8]) {
        let commandOrEvent = packet.kind == .command || packet.kind == .event
        let received = packet.direction == .controllerToHost
        switch datalink {
        case BTSnoopFile.monitorDatalink:
            let flags = UInt32(packet.controller) << 16 | UInt32(packet.monitorOpcode)
            BTSnoopFile.appendRecord(packet.bytes, kept: packet.keep, flags: flags, timestamp: packet.timestamp, to: &out)
        case BTSnoopFile.hciDatalink:
            let flags = BTSnoopFile.flags(received: received, commandOrEvent: commandOrEvent)
            BTSnoopFile.appendRecord(packet.bytes, kept: packet.keep, flags: flags, timestamp: packet.timestamp, to: &out)
        default:
            let flags = BTSnoopFile.flags(received: received, commandOrEvent: commandOrEvent)
            BTSnoopFile.appendRecord([packet.h4Type] + packet.bytes, kept: packet.keep, flags: flags, timestamp: packet.timestamp, to: &out)
        }
    }

    /// The packet as a pcap/pcapng linktype carries it: 187 H4, 201 direction word and H4, 254 monitor header.
    public static func encapsulate(_ packet: CapturePacket, linktype: UInt32) -> [UInt8] {
        var data: [UInt8] = []
        switch linktype {
        case 201:
            data.appendBE32(packet.direction == .controllerToHost ? 1 : 0)
            data.append(packet.h4Type)
        case 254:
            data.appendBE16(packet.controller)
            data.appendBE16(packet.monitorOpcode)
        default:
            data.append(packet.h4Type)
        }
        return data + packet.bytes
    }

    /// A pcap file in either byte order, with µs or ns timestamps.
    public static func pcap(_ packets: [CapturePacket], linktype: UInt32 = 201, bigEndian: Bool = false, nanoseconds: Bool = false)
        -> [UInt8]
    {
        var out: [UInt8] = []
        let put32: (inout [UInt8], UInt32) -> Void = { bigEndian ? $0.appendBE32($1) : $0.appendLE32($1) }
        let put16: (inout [UInt8], UInt16) -> Void = { bigEndian ? $0.appendBE16($1) : $0.appendLE16($1) }
        put32(&out, nanoseconds ? 0xA1B2_3C4D : 0xA1B2_C3D4)
        put16(&out, 2)
        put16(&out, 4)
        put32(&out, 0)
        put32(&out, 0)
        put32(&out, 262_144)
        put32(&out, linktype)
        for packet in packets {
            let data = encapsulate(packet, linktype: linktype)
            let kept = packet.keep.map { min($0, data.count) } ?? data.count
            let seconds = packet.timestamp / 1_000_000
            let micros = packet.timestamp % 1_000_000
            put32(&out, UInt32(seconds))
            put32(&out, UInt32(nanoseconds ? micros * 1000 : micros))
            put32(&out, UInt32(kept))
            put32(&out, UInt32(data.count))
            out += data.prefix(kept)
        }
        return out
    }

    /// A pcapng file with one section and one enhanced packet block per packet, on the interfaces given
    /// (each packet's ``CapturePacket/interface``).
    public static func pcapng(
        _ packets: [CapturePacket], interfaces: [PcapngBuilder.Interface] = [.init(linktype: 201)],
        bigEndian: Bool = false
    ) -> [UInt8] {
        var builder = PcapngBuilder(bigEndian: bigEndian)
        builder.section()
        for interface in interfaces { builder.interface(interface) }
        for packet in packets {
            let interface = interfaces[packet.interface]
            let data = encapsulate(packet, linktype: interface.linktype)
            builder.enhancedPacket(
                interface: UInt32(packet.interface), timestamp: interface.units(packet.timestamp), data: data,
                captured: packet.keep)
        }
        return builder.bytes
    }
}

extension CaptureWriter {
    /// An Apple PacketLogger file: per packet a record of its length (of what follows it), seconds and
    /// microseconds, type byte (``CapturePacket/packetLoggerType``) and bytes; big-endian as macOS's PacketLogger
    /// wrote them, little-endian as iPhones do. ISO packets, which PacketLogger has no type for, are left out;
    /// `keep` is ignored (PacketLogger keeps no original length).
    public static func packetLogger(_ packets: [CapturePacket], bigEndian: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        for packet in packets {
            guard let type = packet.packetLoggerType else { continue }
            appendPacketLoggerRecord(type: type, bytes: packet.bytes, timestamp: packet.timestamp, bigEndian: bigEndian, to: &out)
        }
        return out
    }

    /// Appends one PacketLogger record; `length` overrides the length field (to write a damaged one).
    public static func appendPacketLoggerRecord(
        type: UInt8, bytes: [UInt8], timestamp: Int64, bigEndian: Bool, length: UInt32? = nil, to out: inout [UInt8]
    ) {
        let put32: (inout [UInt8], UInt32) -> Void = { bigEndian ? $0.appendBE32($1) : $0.appendLE32($1) }
        put32(&out, length ?? UInt32(8 + 1 + bytes.count))
        put32(&out, UInt32(timestamp / 1_000_000))
        put32(&out, UInt32(timestamp % 1_000_000))
        out.append(type)
        out += bytes
    }
}

/// Builds pcapng blocks one by one, unusual ones included (simple and obsolete packet blocks, options,
/// unknown blocks, a second section).
public struct PcapngBuilder {
    public struct Interface: Sendable {
        public var linktype: UInt32
        /// `if_tsresol`; nil leaves the option out (µs).
        public var resolution: UInt8?
        /// `if_tsoffset` in seconds; nil leaves it out.
        public var offsetSeconds: Int64?
        /// An `if_name` option, to have one to skip.
        public var name: String?
        public var snapLength: UInt32

        public init(linktype: UInt32, resolution: UInt8? = nil, offsetSeconds: Int64? = nil, name: String? = nil, snapLength: UInt32 = 0) {
            self.linktype = linktype
            self.resolution = resolution
            self.offsetSeconds = offsetSeconds
            self.name = name
            self.snapLength = snapLength
        }

        /// A Unix-epoch µs timestamp in this interface's units (before its offset).
        public func units(_ microseconds: Int64) -> UInt64 {
            let micros = microseconds - (offsetSeconds ?? 0) * 1_000_000
            guard let resolution else { return UInt64(micros) }
            let exponent = Int(resolution & 0x7F)
            if resolution & 0x80 != 0 {
                return UInt64((Double(micros) / 1_000_000 * Double(1 << exponent)).rounded())
            }
            var value = UInt64(micros)
            if exponent >= 6 { for _ in 6..<exponent { value *= 10 } } else { for _ in exponent..<6 { value /= 10 } }
            return value
        }
    }

    public let bigEndian: Bool
    public private(set) var bytes: [UInt8] = []

    public init(bigEndian: Bool = false) { self.bigEndian = bigEndian }

    private func u32(_ value: UInt32, _ out: inout [UInt8]) { bigEndian ? out.appendBE32(value) : out.appendLE32(value) }
    private func u16(_ value: UInt16, _ out: inout [UInt8]) { bigEndian ? out.appendBE16(value) : out.appendLE16(value) }

    /// Any block: type, total length, body (padded to 4), total length.
    public mutating func block(type: UInt32, body: [UInt8]) {
        var padded = body
        while padded.count % 4 != 0 { padded.append(0) }
        let total = UInt32(12 + padded.count)
        u32(type, &bytes)
        u32(total, &bytes)
        bytes += padded
        u32(total, &bytes)
    }

    /// Options: code, length, value padded to 4, then the end-of-options marker.
    public func options(_ options: [(UInt16, [UInt8])]) -> [UInt8] {
        guard !options.isEmpty else { return [] }
        var out: [UInt8] = []
        for (code, value) in options {
            u16(code, &out)
            u16(UInt16(value.count), &out)
            out += value
            while out.count % 4 != 0 { out.append(0) }
        }
        u32(0, &out)
        return out
    }

    public mutating func section(comment: String? = nil) {
        var body: [UInt8] = []
        u32(0x1A2B_3C4D, &body)
        u16(1, &body)
        u16(0, &body)
        body += [UInt8](repeating: 0xFF, count: 8)  // section length unknown
        body += options(comment.map { [(UInt16(1), Array($0.utf8))] } ?? [])
        block(type: 0x0A0D_0D0A, body: body)
    }

    public mutating func interface(_ interface: Interface) {
        var body: [UInt8] = []
        u16(UInt16(interface.linktype), &body)
        u16(0, &body)
        u32(interface.snapLength, &body)
        var list: [(UInt16, [UInt8])] = []
        if let name = interface.name { list.append((2, Array(name.utf8))) }
        if let resolution = interface.resolution { list.append((9, [resolution])) }
        if let offset = interface.offsetSeconds {
            var value: [UInt8] = []
            bigEndian ? value.appendBE64(UInt64(bitPattern: offset)) : value.appendLE64(UInt64(bitPattern: offset))
            list.append((14, value))
        }
        body += options(list)
        block(type: 1, body: body)
    }

    public mutating func enhancedPacket(interface: UInt32, timestamp: UInt64, data: [UInt8], captured: Int? = nil, comment: String? = nil) {
        let kept = captured.map { min($0, data.count) } ?? data.count
        var body: [UInt8] = []
        u32(interface, &body)
        u32(UInt32(timestamp >> 32), &body)
        u32(UInt32(timestamp & 0xFFFF_FFFF), &body)
        u32(UInt32(kept), &body)
        u32(UInt32(data.count), &body)
        body += data.prefix(kept)
        while body.count % 4 != 0 { body.append(0) }
        body += options(comment.map { [(UInt16(1), Array($0.utf8))] } ?? [])
        block(type: 6, body: body)
    }

    public mutating func simplePacket(data: [UInt8]) {
        var body: [UInt8] = []
        u32(UInt32(data.count), &body)
        body += data
        block(type: 3, body: body)
    }

    public mutating func obsoletePacket(interface: UInt16, timestamp: UInt64, data: [UInt8]) {
        var body: [UInt8] = []
        u16(interface, &body)
        u16(0, &body)
        u32(UInt32(timestamp >> 32), &body)
        u32(UInt32(timestamp & 0xFFFF_FFFF), &body)
        u32(UInt32(data.count), &body)
        u32(UInt32(data.count), &body)
        body += data
        block(type: 2, body: body)
    }
}
