import McuMgr

/// The `smp` target: what a central writes to a firmware target's SMP characteristic (hostile bytes), in writes of
/// a size the input chooses, through the reassembler and the target; and the same bytes as one CBOR item and as an
/// MCUboot image.
enum SMPFuzzing {
    static func run(_ data: [UInt8]) {
        if let item = try? CBOR(decoding: data) {
            // What is decoded encodes into something that decodes (NaN keeps equality from being asked).
            precondition((try? CBOR(decoding: item.encoded)) != nil, "a decoded item's encoding does not decode")
        }
        _ = try? McuBootImage(data)
        var configuration = FirmwareTarget.Configuration()
        configuration.bufferSize = 512
        configuration.slotSize = 4096
        let running = FirmwareTarget.Image(
            version: McuBootImage.Version(major: 1, minor: 0, revision: 0), hash: [UInt8](repeating: 0xAA, count: 32))
        var target = FirmwareTarget(running: running, configuration: configuration)
        var reassembler = SMPReassembler(capacity: configuration.bufferSize)
        let size = 1 + Int(data.first ?? 0) % 64
        for start in stride(from: 0, to: data.count, by: size) {
            for piece in reassembler.take(Array(data[start..<min(start + size, data.count)])) {
                guard case .packet(let packet) = piece else { continue }
                let outcome = target.handle(packet)
                if outcome.events.contains(.resetRequested) { _ = target.boot() }
                guard let answer = outcome.answer else { continue }
                precondition(Int(answer.header.length) == answer.body.count, "an answer's length is not its body's")
                precondition(answer.header.sequence == packet.header.sequence, "an answer with another sequence number")
                precondition((try? CBOR(decoding: answer.body)) != nil, "an answer that is not CBOR")
            }
            precondition(reassembler.pending <= configuration.bufferSize, "the reassembler holds more than the buffer")
        }
    }
}
