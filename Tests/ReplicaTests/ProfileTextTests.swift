import JSON
import Replica
import Testing

/// ``JSONNode/profileText(indent:)``: how replica profiles are printed.
@Suite struct ProfileTextTests {
    @Test func keepsOrderAndEscapesToASCII() {
        let json: JSONNode = .object([("z", .int(1)), ("a", .string("é \"q\" \u{1B}"))])
        #expect(json.profileText() == #"{ "z": 1, "a": "\u00e9 \"q\" \u001b" }"#)
        let nested: JSONNode = .object([
            ("list", .array([.int(1), .bool(true)])), ("more", .object([("a", .int(1)), ("b", .int(2)), ("c", .int(3))])),
        ])
        #expect(nested.profileText() == "{\n  \"list\": [1, true],\n  \"more\": { \"a\": 1, \"b\": 2, \"c\": 3 }\n}")
        #expect(JSONNode.hex([0xAB, 0x01]) == .object([("hex", .string("ab01"))]))
    }
}

/// The first implementation (rendered every object twice per level, ~10 s for a 12 MiB profile in a debug
/// build): the oracle for the one-pass printer.
private func reference(_ json: JSONNode, indent: Int = 0) -> String {
    func scalar(_ json: JSONNode) -> Bool {
        if case .array = json.value { return false }
        if case .object = json.value { return false }
        return true
    }
    func small(_ json: JSONNode) -> Bool {
        if case .object(let m) = json.value { return m.count <= 2 && m.allSatisfy { scalar($0.value) } }
        return false
    }
    let pad = String(repeating: "  ", count: indent)
    let inner = String(repeating: "  ", count: indent + 1)
    switch json.value {
    case .null: return "null"
    case .bool(let value): return value ? "true" : "false"
    case .number(let value): return value.text
    case .string(let value): return referenceQuoted(value)
    case .array(let items):
        if items.isEmpty { return "[]" }
        let flat = items.allSatisfy(scalar) ? "[" + items.map { reference($0) }.joined(separator: ", ") + "]" : nil
        if let flat, flat.count + indent * 2 <= 100 { return flat }
        return "[\n" + items.map { inner + reference($0, indent: indent + 1) }.joined(separator: ",\n") + "\n" + pad + "]"
    case .object(let members):
        if members.isEmpty { return "{}" }
        let flat = "{ " + members.map { referenceQuoted($0.key) + ": " + reference($0.value) }.joined(separator: ", ") + " }"
        if members.allSatisfy({ scalar($0.value) || small($0.value) }), flat.count + indent * 2 <= 100, !flat.contains("\n") { return flat }
        return "{\n"
            + members.map { inner + referenceQuoted($0.key) + ": " + reference($0.value, indent: indent + 1) }.joined(separator: ",\n")
            + "\n" + pad + "}"
    }
}

extension ProfileTextTests {
    @Test func printsAsTheFirstPrinterDidOnRandomTrees() {
        var generator = SplitMix(seed: 7)
        let strings = ["", "a", "rx", "é\u{1F600}\"\\\n\t\u{7F}", String(repeating: "ab", count: 60), "0x1A", "{name}"]
        let numbers: [Double] = [
            0, -0.0, 0.5, -2.25, 5, 1e15 - 1, 1e15, -1e15, 1e16, 3.0e-7, 123_456.789, .ulpOfOne, .greatestFiniteMagnitude,
        ]
        func tree(_ depth: Int) -> JSONNode {
            switch generator.next() % (depth > 3 ? 5 : 8) {
            case 0: return .null
            case 1: return .bool(generator.next() % 2 == 0)
            case 2: return .int(Int(truncatingIfNeeded: generator.next() % 2_000_000) - 1_000_000)
            case 3: return .string(strings[Int(generator.next() % UInt64(strings.count))])
            case 4: return .number(numbers[Int(generator.next() % UInt64(numbers.count))])
            case 5, 6:
                return .object((0..<Int(generator.next() % 5)).map { ("k\($0)" + strings[Int(generator.next() % 3)], tree(depth + 1)) })
            default: return .array((0..<Int(generator.next() % 6)).map { _ in tree(depth + 1) })
            }
        }
        // Every number is printed as JSON that reads back as the same value, integral ones without a fraction.
        for number in numbers {
            let text = JSONNode.number(number).profileText()
            let read = try? JSONParser.parse(text, file: "n")
            if case .number(let parsed)? = read?.value { #expect(parsed.double == number, "\(text)") } else { Issue.record("\(text)") }
            #expect(!text.contains(".") || number.rounded() != number || abs(number) >= 1e15, "\(text)")
        }
        for _ in 0..<3_000 {
            let json = tree(0)
            #expect(json.profileText() == reference(json))
            #expect(json.profileText(indent: 3) == reference(json, indent: 3))
        }
    }
}

private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

private func referenceQuoted(_ text: String) -> String {
    func escape(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
    }
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if scalar.value < 0x20 || scalar.value == 0x7F || scalar.value > 0x7E {
                if scalar.value > 0xFFFF {
                    let value = scalar.value - 0x10000
                    out += escape(0xD800 + (value >> 10)) + escape(0xDC00 + (value & 0x3FF))
                } else {
                    out += escape(scalar.value)
                }
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out + "\""
}
