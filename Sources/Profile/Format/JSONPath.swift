import FoundationEssentials

/// Builds and splits JSON paths such as `services[0].characteristics[1].flags[0]`.
public enum JSONPath {
    /// One step of a path: an object key or an array index.
    public enum Component: Sendable, Equatable {
        case key(String)
        case index(Int)
    }

    /// `path.key`, or `path["key"]` when the key needs quoting.
    public static func appending(_ key: String, to path: String) -> String {
        let plain =
            !key.isEmpty
            && (key.utf8.allSatisfy(isPlainASCII)
                || key.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == "$" })
        if plain {
            if path.isEmpty { return key }
            var joined = path
            joined.reserveCapacity(path.utf8.count + 1 + key.utf8.count)
            joined += "."
            joined += key
            return joined
        }
        let escaped = key.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"")
        return path + "[\"" + escaped + "\"]"
    }

    /// An ASCII letter, digit, `_`, `-` or `$`, checked byte-wise: `Character`'s Unicode property lookups made
    /// this a hot spot of profile loading.
    private static func isPlainASCII(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "$"):
            true
        default: false
        }
    }

    public static func appending(_ index: Int, to path: String) -> String {
        path + "[\(index)]"
    }

    /// Splits `a.b[0]["c.d"]` into components; nil when malformed. Dotted numbers (`a.0`) stay keys.
    public static func components(of path: String) -> [Component]? {
        var components: [Component] = []
        let characters = Array(path)
        var index = 0
        var key = ""
        var expectingKey = true
        func flush() -> Bool {
            if key.isEmpty { return !expectingKey }
            components.append(.key(key))
            key = ""
            expectingKey = false
            return true
        }
        while index < characters.count {
            let character = characters[index]
            switch character {
            case ".":
                guard flush() else { return nil }
                expectingKey = true
                index += 1
            case "[":
                if !key.isEmpty { _ = flush() } else if expectingKey && !components.isEmpty { return nil }
                index += 1
                if index < characters.count, characters[index] == "\"" {
                    index += 1
                    var quoted = ""
                    while index < characters.count, characters[index] != "\"" {
                        if characters[index] == "\\", index + 1 < characters.count { index += 1 }
                        quoted.append(characters[index])
                        index += 1
                    }
                    guard index + 1 < characters.count, characters[index + 1] == "]" else { return nil }
                    components.append(.key(quoted))
                    index += 2
                } else {
                    var digits = ""
                    while index < characters.count, characters[index] != "]" {
                        digits.append(characters[index])
                        index += 1
                    }
                    guard index < characters.count, let number = Int(digits), number >= 0 else { return nil }
                    components.append(.index(number))
                    index += 1
                }
                expectingKey = false
            default:
                key.append(character)
                index += 1
            }
        }
        if !key.isEmpty { components.append(.key(key)) } else if expectingKey { return nil }
        return components.isEmpty ? nil : components
    }
}
