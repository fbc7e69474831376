import Bluetooth
import Lexical

/// A value while evaluating an expression.
enum TemplateValue: Equatable {
    case int(Int)
    case bytes([UInt8])
    case text(String)

    init(_ value: ProfileValue) {
        switch value {
        case .number(let n): self = .int(n)
        case .string(let s): self = .text(s)
        case .bytes(let b): self = .bytes(b)
        case .bool(let b): self = .int(b ? 1 : 0)
        }
    }

    /// Numbers become one byte (their low 8 bits), text its UTF-8.
    var bytes: [UInt8] {
        switch self {
        case .int(let n): [UInt8(truncatingIfNeeded: n)]
        case .bytes(let b): b
        case .text(let t): Array(t.utf8)
        }
    }

    /// Bytes read as an unsigned big-endian number (last 8 bytes); text parsed as decimal or 0.
    var int: Int {
        switch self {
        case .int(let n): n
        case .bytes(let b): b.suffix(8).reduce(0) { $0 << 8 | Int($1) }
        case .text(let t): Int(t) ?? 0
        }
    }

    /// Numbers in decimal, bytes as uppercase hex.
    var text: String {
        switch self {
        case .int(let n): String(n)
        case .bytes(let b): b.hexString()
        case .text(let t): t
        }
    }
}

extension TemplateValue {
    /// The value cut to ``ProfileLimits/valueLength`` bytes (text at a scalar boundary); sets `capped` if it was cut.
    func capped(_ capped: inout Bool) -> TemplateValue {
        let limit = ProfileLimits.valueLength
        switch self {
        case .int:
            return self
        case .bytes(let bytes):
            guard bytes.count > limit else { return self }
            capped = true
            return .bytes(Array(bytes.prefix(limit)))
        case .text(let text):
            guard text.utf8.count > limit else { return self }
            capped = true
            var end = text.utf8.index(text.utf8.startIndex, offsetBy: limit)
            while end.samePosition(in: text.unicodeScalars) == nil { end = text.utf8.index(before: end) }
            return .text(String(text[..<end]))
        }
    }
}

extension Template {
    /// Renders the template to bytes. Never traps, and never builds a value over ``ProfileLimits/valueLength``
    /// bytes (the result included): longer ones are cut, counts over 512 clamped, and `context.capped` set.
    public func render(in context: inout TemplateContext) -> [UInt8] {
        var output: [UInt8] = []
        for part in parts {
            switch part {
            case .literal(let bytes):
                Self.append(bytes, to: &output, capped: &context.capped)
            case .expression(.call("pad", let arguments, _), _) where kind == .bytes:
                let length = Self.count(arguments.first.map { evaluate($0, in: &context).int } ?? 0, capped: &context.capped)
                let fill = arguments.count > 1 ? UInt8(truncatingIfNeeded: evaluate(arguments[1], in: &context).int) : 0
                if output.count < length { output += repeatElement(fill, count: length - output.count) }
            case .expression(let expression, _):
                let value = evaluate(expression, in: &context)
                Self.append(kind == .bytes ? value.bytes : Array(value.text.utf8), to: &output, capped: &context.capped)
            }
        }
        return output
    }

    /// Appends as much of `bytes` as fits under ``ProfileLimits/valueLength``.
    private static func append(_ bytes: [UInt8], to output: inout [UInt8], capped: inout Bool) {
        let room = ProfileLimits.valueLength - output.count
        if bytes.count > room {
            capped = true
            output += bytes[..<room]
        } else if output.isEmpty {
            output = bytes
        } else {
            output += bytes
        }
    }

    /// A count for `random`, `fill` and `pad`: 0 when negative, at most ``TemplateBuiltins/maximumLength``.
    private static func count(_ value: Int, capped: inout Bool) -> Int {
        if value > TemplateBuiltins.maximumLength {
            capped = true
            return TemplateBuiltins.maximumLength
        }
        return max(0, value)
    }

    /// Renders the template to text (numbers in decimal, bytes as uppercase hex).
    public func renderText(in context: inout TemplateContext) -> String {
        String(decoding: render(in: &context), as: UTF8.self)
    }

    /// The value of an expression, at most ``ProfileLimits/valueLength`` bytes long.
    func evaluate(_ expression: TemplateExpression, in context: inout TemplateContext) -> TemplateValue {
        evaluateUncapped(expression, in: &context).capped(&context.capped)
    }

    private func evaluateUncapped(_ expression: TemplateExpression, in context: inout TemplateContext) -> TemplateValue {
        switch expression {
        case .integer(let n, _):
            return .int(n)
        case .string(let s, _):
            return .text(s)
        case .name(let name, _):
            return lookup(name, in: context)
        case .index(let name, let position, _):
            let bytes = lookup(name, in: context).bytes
            return .bytes(position >= 0 && position < bytes.count ? [bytes[position]] : [])
        case .slice(let name, let lower, let upper, _):
            let bytes = lookup(name, in: context).bytes
            let start = min(max(0, lower), bytes.count)
            let end = min(max(start, (upper ?? Int.max - 1) &+ 1), bytes.count)
            return .bytes(Array(bytes[start..<end]))
        case .binary(let op, let lhs, let rhs, _):
            let a = evaluate(lhs, in: &context).int
            let b = evaluate(rhs, in: &context).int
            switch op {
            case .add: return .int(a &+ b)
            case .subtract: return .int(a &- b)
            case .multiply: return .int(a &* b)
            }
        case .call(let name, let arguments, _):
            return call(name, arguments, in: &context)
        }
    }

    private func lookup(_ name: String, in context: TemplateContext) -> TemplateValue {
        switch name {
        case "request": return .bytes(context.request)
        case "address": return .text(context.adapterAddress.compact)
        case "addressWithColons": return .text(context.adapterAddress.description)
        case "addressBytes": return .bytes(context.adapterAddress.bytes)
        case "central": return .text(context.centralAddress?.compact ?? "")
        case "centralWithColons": return .text(context.centralAddress?.description ?? "")
        case "centralBytes": return .bytes(context.centralAddress?.bytes ?? [])
        default:
            if let value = context.state[name] ?? context.variables[name] { return TemplateValue(value) }
            return .bytes([])
        }
    }

    private func call(_ name: String, _ arguments: [TemplateExpression], in context: inout TemplateContext) -> TemplateValue {
        func argument(_ index: Int) -> TemplateValue {
            index < arguments.count ? evaluate(arguments[index], in: &context) : .bytes([])
        }
        /// Feeds the bytes of every argument in turn to `body` (checksums over them, without concatenating).
        func forEachArgument(_ body: ([UInt8]) -> Void) {
            for index in arguments.indices { body(argument(index).bytes) }
        }
        func integer(width: Int, littleEndian: Bool) -> TemplateValue {
            let value = UInt64(truncatingIfNeeded: argument(0).int)
            let bytes = (0..<width).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
            return .bytes(littleEndian ? bytes : bytes.reversed())
        }
        func nameArgument() -> String {
            if case .name(let name, _)? = arguments.first { return name }
            return argument(0).text
        }
        switch name {
        case "u8": return integer(width: 1, littleEndian: true)
        case "u16le": return integer(width: 2, littleEndian: true)
        case "u16be": return integer(width: 2, littleEndian: false)
        case "u24le": return integer(width: 3, littleEndian: true)
        case "u24be": return integer(width: 3, littleEndian: false)
        case "u32le": return integer(width: 4, littleEndian: true)
        case "u32be": return integer(width: 4, littleEndian: false)
        case "u64le": return integer(width: 8, littleEndian: true)
        case "u64be": return integer(width: 8, littleEndian: false)
        case "len": return .int(argument(0).bytes.count)
        case "random": return .bytes(context.generator.bytes(Self.count(argument(0).int, capped: &context.capped)))
        case "counter":
            let key = nameArgument()
            let value = context.counters[key, default: 0]
            context.counters[key] = value &+ 1
            return .int(value)
        case "sum8":
            var sum: UInt8 = 0
            forEachArgument { sum &+= Checksum.sum8($0) }
            return .int(Int(sum))
        case "xor8":
            var xor: UInt8 = 0
            forEachArgument { xor ^= Checksum.xor8($0) }
            return .int(Int(xor))
        case "crc16":
            var crc: UInt16 = 0xFFFF
            forEachArgument { crc = Checksum.crc16CCITTFalse($0, continuing: crc) }
            return .int(Int(crc))
        case "hex": return .bytes(ValueForm.hex.bytes(argument(0).text) ?? [])
        case "utf8": return .bytes(Array(argument(0).text.utf8))
        case "reverse": return .bytes(argument(0).bytes.reversed())
        case "fill":
            let byte = UInt8(truncatingIfNeeded: argument(0).int)
            return .bytes([UInt8](repeating: byte, count: Self.count(argument(1).int, capped: &context.capped)))
        case "value": return .bytes(context.characteristicValues[CharacteristicID(nameArgument())] ?? [])
        case "arg": return .text(context.arguments[nameArgument()] ?? "")
        default: return .bytes([])  // pad() inside an expression and unknown functions render nothing.
        }
    }
}
