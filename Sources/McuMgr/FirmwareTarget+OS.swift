/// The OS management group (0): echo, reset (in ``FirmwareTarget/handle(_:)``), params, info, bootloader info.
extension FirmwareTarget {
    func echo(_ body: CBOR) -> Result {
        guard let text = body["d"]?.text else { return Result(.management(.invalid), summary: "echo without text \"d\"") }
        return Result(answer: .map(["r": .text(text)]), summary: "echo of \(text.utf8.count) bytes")
    }

    /// `format`'s letters, each a field of ``Configuration/info`` in a fixed order, separated by spaces (`a`: all);
    /// an unknown letter is `invalidFormat`.
    func info(_ body: CBOR) -> Result {
        let format = body["format"]?.text ?? "s"
        let order: [Character] = ["s", "n", "r", "v", "b", "m", "p", "i", "o"]
        guard format.allSatisfy({ $0 == "a" || order.contains($0) }) else {
            return Result(.group(.os(.invalidFormat)), summary: "info: format \"\(format.prefix(32))\" has an unknown letter")
        }
        let fields = order.filter { format.contains($0) || format.contains("a") }.map { configuration.info[$0] ?? "" }
        return Result(answer: .map(["output": .text(fields.joined(separator: " "))]), summary: "info \(format.prefix(32))")
    }

    func bootloaderInfo(_ body: CBOR) -> Result {
        switch body["query"] {
        case nil: return Result(answer: .map(["bootloader": .text("MCUboot")]), summary: "bootloader info: MCUboot")
        case .text("mode")?:
            var answer: [CBOR.Entry] = [CBOR.Entry(.text("mode"), .int(configuration.bootloaderMode))]
            if configuration.noDowngrade { answer.append(CBOR.Entry(.text("no-downgrade"), .bool(true))) }
            return Result(answer: .map(answer), summary: "bootloader mode \(configuration.bootloaderMode)")
        default: return Result(.group(.os(.queryYieldsNoAnswer)), summary: "bootloader info: a query it has no answer to")
        }
    }
}
