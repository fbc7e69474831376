/// pcapng files: blocks of type, total length, body, total length again. Section headers (SHB) set the byte
/// order; interface descriptions (IDB) give each interface its linktype and timestamp resolution; packets
/// come in enhanced (EPB), simple (SPB) and obsolete (PB) packet blocks. Other blocks and all options are
/// skipped by their lengths.
final class PcapngReader: RecordSource {
    static let sectionHeader: UInt32 = 0x0A0D_0D0A
    static let interfaceDescription: UInt32 = 1
    static let obsoletePacket: UInt32 = 2
    static let simplePacket: UInt32 = 3
    static let enhancedPacket: UInt32 = 6
    /// The largest block read whole (packet data is limited further, to a record's maximum).
    static let maximumBlockLength = 1 << 24

    struct Interface {
        var linktype: UInt32
        var encapsulation: Encapsulation?
        var snapLength: UInt32
        /// `if_tsresol`: bit 7 clear, units of 10^-n s; set, 2^-n s. Default 6 (µs).
        var resolution: UInt8 = 6
        /// `if_tsoffset`: seconds added to every timestamp.
        var offsetSeconds: Int64 = 0
        var reported = false
    }

    let format = CaptureFormat.pcapng
    private let input: ByteInput
    private var bigEndian = false
    private var interfaces: [Interface] = []
    private(set) var linktypes: [UInt32] = []
    private(set) var problems = ProblemLog()
    private(set) var frames = 0
    private var stopped = false

    init(_ input: ByteInput) throws(CaptureProblem) {
        self.input = input
        // Read the section header and the interface blocks after it, so a file with no HCI interface at all
        // is refused up front.
        while !stopped, let type = peekType(), type == Self.sectionHeader || type == Self.interfaceDescription {
            _ = nextBlock()
        }
        if let problem = problems.kept.first, problem.reason.endsReading, frames == 0, interfaces.isEmpty { throw problem }
        if !interfaces.isEmpty, interfaces.allSatisfy({ $0.encapsulation == nil }) {
            throw CaptureProblem(.unsupportedLinktype(interfaces[0].linktype))
        }
    }

    func next() -> HCIRecord? {
        while !stopped {
            if let record = nextBlock() { return record }
        }
        return nil
    }

    private func peekType() -> UInt32? {
        guard let bytes = input.peek(4) else { return nil }
        var cursor = ByteCursor(bytes)
        return cursor.u32(bigEndian: bigEndian)
    }

    /// Reads one block; returns a record when it was a packet of an HCI interface.
    private func nextBlock() -> HCIRecord? {
        let blockOffset = input.offset
        guard let head = input.peek(12) else {
            if !input.atEnd { stop(input.shortHeader("block header", needed: 12, frame: nil, at: blockOffset)) }
            stopped = true
            return nil
        }
        var cursor = ByteCursor(head)
        var type = cursor.u32(bigEndian: bigEndian)!
        if type == Self.sectionHeader {
            var magicCursor = ByteCursor(head.dropFirst(8))
            switch magicCursor.u32(bigEndian: true)! {
            case 0x1A2B_3C4D: bigEndian = true
            case 0x4D3C_2B1A: bigEndian = false
            case let magic:
                stop(
                    CaptureProblem(
                        .badBlock("section header byte-order magic 0x\(String(magic, radix: 16)) is not 0x1a2b3c4d either way"),
                        offset: blockOffset))
                return nil
            }
            cursor = ByteCursor(head)
            type = cursor.u32(bigEndian: bigEndian)!
        }
        let length = cursor.u32(bigEndian: bigEndian)!
        let isPacket = type == Self.enhancedPacket || type == Self.simplePacket || type == Self.obsoletePacket
        if isPacket { frames += 1 }
        let frame = isPacket ? frames : nil
        guard length >= 12, length % 4 == 0 else {
            stop(
                CaptureProblem(
                    .badBlock("block type 0x\(String(type, radix: 16)) has total length \(length) (at least 12, a multiple of 4)"),
                    frame: frame, offset: blockOffset))
            return nil
        }
        let known = isPacket || type == Self.sectionHeader || type == Self.interfaceDescription
        guard known else {
            // Name resolution, statistics, custom and unknown blocks: skipped whole.
            let skipped = input.skip(Int(length))
            if skipped < Int(length) {
                stop(CaptureProblem(.truncatedRecord(needed: Int(length), available: skipped), offset: blockOffset))
            }
            return nil
        }
        guard length <= Self.maximumBlockLength else {
            stop(
                CaptureProblem(
                    .absurdLength(what: "block", length: UInt64(length), limit: Self.maximumBlockLength),
                    frame: frame, offset: blockOffset))
            return nil
        }
        guard let block = input.read(Int(length)) else {
            stop(input.shortRecord(needed: Int(length), frame: frame, at: blockOffset))
            return nil
        }
        var trailer = ByteCursor(block.suffix(4))
        let trailing = trailer.u32(bigEndian: bigEndian)!
        guard trailing == length else {
            stop(
                CaptureProblem(
                    .badBlock("trailing total length \(trailing) differs from the leading \(length)"), frame: frame, offset: blockOffset))
            return nil
        }
        let body = block.dropFirst(8).dropLast(4)
        switch type {
        case Self.sectionHeader:
            readSectionHeader(body, at: blockOffset)
            return nil
        case Self.interfaceDescription:
            readInterface(body, at: blockOffset)
            return nil
        default:
            return readPacket(type: type, body, frame: frames, at: blockOffset)
        }
    }

    private func readSectionHeader(_ body: ArraySlice<UInt8>, at offset: Int) {
        var cursor = ByteCursor(body)
        guard cursor.skip(4), let major = bigEndian ? cursor.u16be() : cursor.u16le(),
            let minor = bigEndian ? cursor.u16be() : cursor.u16le()
        else {
            stop(CaptureProblem(.badBlock("section header body too short"), offset: offset))
            return
        }
        guard major == 1 else {
            stop(CaptureProblem(.unsupportedVersion(format: "pcapng", version: "\(major).\(minor)"), offset: offset))
            return
        }
        interfaces = []
    }

    private func readInterface(_ body: ArraySlice<UInt8>, at offset: Int) {
        var cursor = ByteCursor(body)
        guard let linktype = bigEndian ? cursor.u16be() : cursor.u16le(), cursor.skip(2),
            let snapLength = cursor.u32(bigEndian: bigEndian)
        else {
            problems.add(CaptureProblem(.shortPacket(what: "interface description", needed: 8, available: body.count), offset: offset))
            interfaces.append(Interface(linktype: 0, encapsulation: nil, snapLength: 0, reported: true))
            return
        }
        var interface = Interface(
            linktype: UInt32(linktype), encapsulation: CaptureFormat.encapsulation(linktype: UInt32(linktype)),
            snapLength: snapLength)
        forEachOption(&cursor, at: offset) { code, value in
            var option = ByteCursor(value)
            switch code {
            case 9: if let resolution = option.u8() { interface.resolution = resolution }
            case 14: if let seconds = option.u64(bigEndian: bigEndian) { interface.offsetSeconds = Int64(bitPattern: seconds) }
            default: break
            }
        }
        interfaces.append(interface)
        if !linktypes.contains(UInt32(linktype)) { linktypes.append(UInt32(linktype)) }
    }

    /// Options: code, length (both 16-bit), value padded to 4 bytes; code 0 ends them.
    private func forEachOption(_ cursor: inout ByteCursor, at offset: Int, _ body: (UInt16, ArraySlice<UInt8>) -> Void) {
        while cursor.remaining >= 4 {
            let code = bigEndian ? cursor.u16be()! : cursor.u16le()!
            let length = Int(bigEndian ? cursor.u16be()! : cursor.u16le()!)
            if code == 0 { return }
            guard let value = cursor.take(length), cursor.skip((4 - length % 4) % 4) else {
                problems.add(
                    CaptureProblem(.shortPacket(what: "option \(code)", needed: length, available: cursor.remaining), offset: offset))
                return
            }
            body(code, value)
        }
    }

    private func readPacket(type: UInt32, _ body: ArraySlice<UInt8>, frame: Int, at offset: Int) -> HCIRecord? {
        var cursor = ByteCursor(body)
        var interfaceID = 0
        var rawTimestamp: UInt64?
        let capturedLength: Int
        let originalLength: Int
        switch type {
        case Self.simplePacket:
            guard let original = cursor.u32(bigEndian: bigEndian) else {
                return skipPacket(.shortPacket(what: "simple packet block", needed: 4, available: body.count), frame, offset)
            }
            originalLength = Int(original)
            var captured = min(originalLength, cursor.remaining)
            if let snap = interfaces.first?.snapLength, snap > 0 { captured = min(captured, Int(snap)) }
            capturedLength = captured
        default:
            guard cursor.remaining >= 20 else {
                return skipPacket(.shortPacket(what: "packet block", needed: 20, available: body.count), frame, offset)
            }
            if type == Self.enhancedPacket {
                interfaceID = Int(cursor.u32(bigEndian: bigEndian)!)
            } else {
                interfaceID = Int(bigEndian ? cursor.u16be()! : cursor.u16le()!)
                _ = cursor.skip(2)  // drops
            }
            let high = cursor.u32(bigEndian: bigEndian)!
            let low = cursor.u32(bigEndian: bigEndian)!
            rawTimestamp = UInt64(high) << 32 | UInt64(low)
            capturedLength = Int(cursor.u32(bigEndian: bigEndian)!)
            originalLength = Int(cursor.u32(bigEndian: bigEndian)!)
        }
        guard capturedLength <= CaptureFormat.maximumRecordLength else {
            return skipPacket(
                .absurdLength(what: "packet", length: UInt64(capturedLength), limit: CaptureFormat.maximumRecordLength), frame, offset)
        }
        guard let data = cursor.take(capturedLength) else {
            return skipPacket(
                .lengthMismatch(what: "packet block captured", declared: capturedLength, actual: cursor.remaining), frame, offset)
        }
        guard interfaceID < interfaces.count else { return skipPacket(.unknownInterface(interfaceID), frame, offset) }
        guard let encapsulation = interfaces[interfaceID].encapsulation else {
            if !interfaces[interfaceID].reported {
                interfaces[interfaceID].reported = true
                problems.add(
                    CaptureProblem(
                        .interfaceNotHCI(interface: interfaceID, linktype: interfaces[interfaceID].linktype), frame: frame, offset: offset))
            }
            return nil
        }
        let (unwrapped, problem) = encapsulation.unwrap(data, originalLength: max(originalLength, capturedLength), flags: 0)
        if let problem { problems.add(CaptureProblem(problem, frame: frame, offset: offset)) }
        guard let unwrapped else { return nil }
        let timestamp = rawTimestamp.flatMap {
            Self.microseconds($0, resolution: interfaces[interfaceID].resolution, offsetSeconds: interfaces[interfaceID].offsetSeconds)
        }
        return HCIRecord(
            frame: frame, timestamp: timestamp, direction: unwrapped.direction, controller: unwrapped.controller,
            kind: unwrapped.kind, payload: unwrapped.payload, originalLength: unwrapped.originalLength, fileOffset: offset)
    }

    private func skipPacket(_ reason: CaptureProblem.Reason, _ frame: Int, _ offset: Int) -> HCIRecord? {
        problems.add(CaptureProblem(reason, frame: frame, offset: offset))
        return nil
    }

    /// A raw timestamp in `resolution` units (`if_tsresol`) as microseconds since the epoch; nil when it
    /// does not fit.
    static func microseconds(_ raw: UInt64, resolution: UInt8, offsetSeconds: Int64) -> Int64? {
        let exponent = Int(resolution & 0x7F)
        var value: UInt64
        if resolution & 0x80 == 0 {
            if exponent >= 6 {
                let divisor = exponent - 6 > 19 ? nil : power(10, exponent - 6)
                value = divisor.map { raw / $0 } ?? 0
            } else {
                let (product, overflow) = raw.multipliedReportingOverflow(by: power(10, 6 - exponent)!)
                if overflow { return nil }
                value = product
            }
        } else {
            // raw × 10^6 / 2^exponent, without overflowing.
            let (high, low) = raw.multipliedFullWidth(by: 1_000_000)
            if exponent >= 128 {
                value = 0
            } else if exponent >= 64 {
                value = exponent == 64 ? high : high >> UInt64(exponent - 64)
            } else if exponent == 0 {
                if high != 0 { return nil }
                value = low
            } else {
                if high >> UInt64(exponent) != 0 { return nil }
                value = high << UInt64(64 - exponent) | low >> UInt64(exponent)
            }
        }
        guard var micros = Int64(exactly: value) else { return nil }
        let (shift, overflow) = offsetSeconds.multipliedReportingOverflow(by: 1_000_000)
        if overflow { return nil }
        let (sum, overflowSum) = micros.addingReportingOverflow(shift)
        if overflowSum { return nil }
        micros = sum
        return micros
    }

    private static func power(_ base: UInt64, _ exponent: Int) -> UInt64? {
        var result: UInt64 = 1
        for _ in 0..<exponent {
            let (product, overflow) = result.multipliedReportingOverflow(by: base)
            if overflow { return nil }
            result = product
        }
        return result
    }

    private func stop(_ problem: CaptureProblem) {
        problems.add(problem)
        stopped = true
    }
}
