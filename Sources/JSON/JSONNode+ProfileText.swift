extension JSONNode {
    /// Printed the way people write profiles (`gattemu import`, `clone`, the relay's mirror): two-space indentation,
    /// an array of scalars or an object of scalars and small objects on one line when it fits in 100 columns, and
    /// plain ASCII (everything else as `\u` escapes). Members in their order; no final newline.
    ///
    /// One pass: whether a value fits on one line is measured (stopping at the line's width), not rendered.
    public func profileText(indent: Int = 0) -> String {
        var out: [UInt8] = []
        write(into: &out, indent: indent)
        return String(decoding: out, as: UTF8.self)
    }

    /// The width a value may take on one line.
    private static let lineWidth = 100

    private func write(into out: inout [UInt8], indent: Int) {
        switch value {
        case .null, .bool, .number, .string:
            writeFlat(into: &out)
        case .array(let items):
            if items.isEmpty { return out.append(contentsOf: "[]".utf8) }
            if items.allSatisfy(\.isScalar), flatLength(limit: Self.lineWidth - indent * 2) != nil {
                return writeFlat(into: &out)
            }
            out.append(contentsOf: "[\n".utf8)
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(contentsOf: ",\n".utf8) }
                Self.pad(&out, indent + 1)
                item.write(into: &out, indent: indent + 1)
            }
            out.append(0x0A)
            Self.pad(&out, indent)
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            if members.isEmpty { return out.append(contentsOf: "{}".utf8) }
            if members.allSatisfy({ $0.value.isScalar || $0.value.isSmallObject }), flatLength(limit: Self.lineWidth - indent * 2) != nil {
                return writeFlat(into: &out)
            }
            out.append(contentsOf: "{\n".utf8)
            for (index, member) in members.enumerated() {
                if index > 0 { out.append(contentsOf: ",\n".utf8) }
                Self.pad(&out, indent + 1)
                Self.writeQuoted(member.key, into: &out)
                out.append(contentsOf: ": ".utf8)
                member.value.write(into: &out, indent: indent + 1)
            }
            out.append(0x0A)
            Self.pad(&out, indent)
            out.append(UInt8(ascii: "}"))
        }
    }

    /// On one line: `[a, b]`, `{ "k": v }`.
    private func writeFlat(into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let number): out.append(contentsOf: number.text.utf8)
        case .string(let value): Self.writeQuoted(value, into: &out)
        case .array(let items):
            if items.isEmpty { return out.append(contentsOf: "[]".utf8) }
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(contentsOf: ", ".utf8) }
                item.writeFlat(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            if members.isEmpty { return out.append(contentsOf: "{}".utf8) }
            out.append(contentsOf: "{ ".utf8)
            for (index, member) in members.enumerated() {
                if index > 0 { out.append(contentsOf: ", ".utf8) }
                Self.writeQuoted(member.key, into: &out)
                out.append(contentsOf: ": ".utf8)
                member.value.writeFlat(into: &out)
            }
            out.append(contentsOf: " }".utf8)
        }
    }

    /// The length of ``writeFlat(into:)``'s text, or nil once it passes `limit` (measuring stops there).
    private func flatLength(limit: Int) -> Int? {
        var total = 0
        return addFlatLength(to: &total, limit: limit) ? total : nil
    }

    private func addFlatLength(to total: inout Int, limit: Int) -> Bool {
        switch value {
        case .null: total += 4
        case .bool(let value): total += value ? 4 : 5
        case .number(let number): total += number.text.utf8.count
        case .string(let value): return Self.addQuotedLength(value, to: &total, limit: limit)
        case .array(let items):
            total += items.isEmpty ? 2 : 2 + 2 * (items.count - 1)
            for item in items {
                guard item.addFlatLength(to: &total, limit: limit) else { return false }
            }
        case .object(let members):
            total += members.isEmpty ? 2 : 4 + 4 * members.count - 2
            for member in members {
                guard Self.addQuotedLength(member.key, to: &total, limit: limit), member.value.addFlatLength(to: &total, limit: limit)
                else { return false }
            }
        }
        return total <= limit
    }

    private static func pad(_ out: inout [UInt8], _ indent: Int) {
        out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * 2))
    }

    private var isScalar: Bool {
        switch value {
        case .array, .object: false
        default: true
        }
    }

    private var isSmallObject: Bool {
        if case .object(let members) = value { return members.count <= 2 && members.allSatisfy(\.value.isScalar) }
        return false
    }

    /// A JSON string literal; control characters and non-ASCII as escapes, so the file is plain ASCII.
    private static func writeQuoted(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out.append(contentsOf: "\\\"".utf8)
            case "\\": out.append(contentsOf: "\\\\".utf8)
            case "\n": out.append(contentsOf: "\\n".utf8)
            case "\r": out.append(contentsOf: "\\r".utf8)
            case "\t": out.append(contentsOf: "\\t".utf8)
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F || scalar.value > 0x7E {
                    if scalar.value > 0xFFFF {
                        let value = scalar.value - 0x10000
                        escape(0xD800 + (value >> 10), into: &out)
                        escape(0xDC00 + (value & 0x3FF), into: &out)
                    } else {
                        escape(scalar.value, into: &out)
                    }
                } else {
                    out.append(UInt8(scalar.value))
                }
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// The length of ``writeQuoted(_:into:)``'s literal added to `total`; false once `total` passes `limit`.
    private static func addQuotedLength(_ text: String, to total: inout Int, limit: Int) -> Bool {
        total += 2
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"", "\\", "\n", "\r", "\t": total += 2
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F || scalar.value > 0x7E {
                    total += scalar.value > 0xFFFF ? 12 : 6
                } else {
                    total += 1
                }
            }
            if total > limit { return false }
        }
        return total <= limit
    }

    private static func escape(_ value: UInt32, into out: inout [UInt8]) {
        let digits = String(value, radix: 16)
        out.append(contentsOf: "\\u".utf8)
        out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: 4 - digits.count))
        out.append(contentsOf: digits.utf8)
    }
}
