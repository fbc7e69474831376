import Bluetooth

/// A strict JSON parser (RFC 8259) that records the line and column of every value and key.
///
/// It never traps: malformed input, invalid UTF-8, deep nesting (beyond `maximumDepth`) and
/// huge numbers all end in a `JSONSyntaxError` or a value whose number text is kept verbatim.
public struct JSONParser {
    /// Arrays and objects nested deeper than this are rejected.
    public static let maximumDepth = 128

    private let bytes: [UInt8]
    private let file: String
    private var index = 0
    private var line = 1
    private var column = 1
    private var depth = 0

    private init(bytes: [UInt8], file: String) {
        self.bytes = bytes
        self.file = file
    }

    /// Parses one JSON document; `file` is only used for locations.
    public static func parse(_ bytes: [UInt8], file: String) throws(JSONSyntaxError) -> JSONNode {
        var parser = JSONParser(bytes: bytes, file: file)
        // A UTF-8 byte order mark is tolerated.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.index = 3 }
        parser.skipWhitespace()
        let node = try parser.parseValue()
        parser.skipWhitespace()
        if parser.index < bytes.count {
            throw parser.error("unexpected \(parser.describeCurrent()) after the end of the document")
        }
        return node
    }

    /// Parses a string of JSON text.
    public static func parse(_ text: String, file: String) throws(JSONSyntaxError) -> JSONNode {
        try parse(Array(text.utf8), file: file)
    }

    // MARK: - Values

    private var location: SourceLocation { SourceLocation(file: file, line: line, column: column) }

    private func error(_ message: String, at location: SourceLocation? = nil) -> JSONSyntaxError {
        JSONSyntaxError(message: message, location: location ?? self.location)
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private func describeCurrent() -> String {
        guard let byte = current else { return "end of file" }
        if byte >= 0x21 && byte < 0x7F { return "character '\(Character(UnicodeScalar(byte)))'" }
        return "byte 0x\(String(byte, radix: 16, uppercase: true))"
    }

    private mutating func advance() {
        guard index < bytes.count else { return }
        let byte = bytes[index]
        index += 1
        if byte == UInt8(ascii: "\n") {
            line += 1
            column = 1
        } else if byte & 0xC0 != 0x80 {
            column += 1
        }
    }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
            advance()
        }
    }

    private mutating func parseValue() throws(JSONSyntaxError) -> JSONNode {
        let start = location
        guard let byte = current else { throw error("unexpected end of file, expected a value") }
        switch byte {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return JSONNode(.string(try parseString()), at: start)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        case UInt8(ascii: "t"):
            try expectWord("true")
            return JSONNode(.bool(true), at: start)
        case UInt8(ascii: "f"):
            try expectWord("false")
            return JSONNode(.bool(false), at: start)
        case UInt8(ascii: "n"):
            try expectWord("null")
            return JSONNode(.null, at: start)
        default: throw error("unexpected \(describeCurrent()), expected a value")
        }
    }

    private mutating func expectWord(_ word: String) throws(JSONSyntaxError) {
        let start = location
        for expected in word.utf8 {
            guard current == expected else { throw error("invalid literal, expected '\(word)'", at: start) }
            advance()
        }
        if let next = current, isIdentifierByte(next) {
            throw error("invalid literal, expected '\(word)'", at: start)
        }
    }

    private func isIdentifierByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || byte == 0x5F
    }

    private mutating func enterContainer() throws(JSONSyntaxError) {
        depth += 1
        if depth > Self.maximumDepth {
            throw error("nesting is deeper than \(Self.maximumDepth) levels")
        }
    }

    private mutating func parseArray() throws(JSONSyntaxError) -> JSONNode {
        let start = location
        try enterContainer()
        advance()  // [
        var items: [JSONNode] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            advance()
            depth -= 1
            return JSONNode(.array(items), at: start)
        }
        while true {
            skipWhitespace()
            items.append(try parseValue())
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                advance()
                skipWhitespace()
                if current == UInt8(ascii: "]") { throw error("trailing comma in array") }
            case UInt8(ascii: "]"):
                advance()
                depth -= 1
                return JSONNode(.array(items), at: start)
            case nil:
                throw error("unexpected end of file, the array opened at \(start.line):\(start.column) is not closed")
            default:
                throw error("unexpected \(describeCurrent()), expected ',' or ']'")
            }
        }
    }

    private mutating func parseObject() throws(JSONSyntaxError) -> JSONNode {
        let start = location
        try enterContainer()
        advance()  // {
        var members: [JSONMember] = []
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            advance()
            depth -= 1
            return JSONNode(.object(members), at: start)
        }
        while true {
            skipWhitespace()
            let keyLocation = location
            guard current == UInt8(ascii: "\"") else {
                if current == nil {
                    throw error("unexpected end of file, the object opened at \(start.line):\(start.column) is not closed")
                }
                throw error("unexpected \(describeCurrent()), expected a quoted key")
            }
            let key = try parseString()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else {
                throw error("unexpected \(describeCurrent()), expected ':' after the key \"\(key)\"")
            }
            advance()
            skipWhitespace()
            let value = try parseValue()
            members.append(JSONMember(key: key, keyLocation: keyLocation, value: value))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                advance()
                skipWhitespace()
                if current == UInt8(ascii: "}") { throw error("trailing comma in object") }
            case UInt8(ascii: "}"):
                advance()
                depth -= 1
                return JSONNode(.object(members), at: start)
            case nil:
                throw error("unexpected end of file, the object opened at \(start.line):\(start.column) is not closed")
            default:
                throw error("unexpected \(describeCurrent()), expected ',' or '}'")
            }
        }
    }

    // MARK: - Strings

    private mutating func parseString() throws(JSONSyntaxError) -> String {
        let start = location
        advance()  // opening quote
        var buffer: [UInt8] = []
        while true {
            guard let byte = current else {
                throw error("unexpected end of file in the string starting at \(start.line):\(start.column)")
            }
            switch byte {
            case UInt8(ascii: "\""):
                advance()
                guard let text = String(validating: buffer, as: UTF8.self) else {
                    throw error("string is not valid UTF-8", at: start)
                }
                return text
            case UInt8(ascii: "\\"):
                advance()
                try parseEscape(into: &buffer)
            case 0x00..<0x20:
                throw error("control character (0x\(String(byte, radix: 16))) in a string; escape it")
            default:
                buffer.append(byte)
                advance()
            }
        }
    }

    private mutating func parseEscape(into buffer: inout [UInt8]) throws(JSONSyntaxError) {
        guard let byte = current else { throw error("unexpected end of file in an escape") }
        let simple: [UInt8: UInt8] = [
            UInt8(ascii: "\""): 0x22, UInt8(ascii: "\\"): 0x5C, UInt8(ascii: "/"): 0x2F,
            UInt8(ascii: "b"): 0x08, UInt8(ascii: "f"): 0x0C, UInt8(ascii: "n"): 0x0A,
            UInt8(ascii: "r"): 0x0D, UInt8(ascii: "t"): 0x09,
        ]
        if let replacement = simple[byte] {
            buffer.append(replacement)
            advance()
            return
        }
        guard byte == UInt8(ascii: "u") else { throw error("invalid escape '\\\(describeCurrent())'") }
        advance()
        var scalar = try parseHex4()
        if (0xD800...0xDBFF).contains(scalar) {
            // A high surrogate must be followed by an escaped low surrogate.
            guard current == UInt8(ascii: "\\") else { throw error("unpaired surrogate in \\u escape") }
            advance()
            guard current == UInt8(ascii: "u") else { throw error("unpaired surrogate in \\u escape") }
            advance()
            let low = try parseHex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate in \\u escape") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw error("unpaired surrogate in \\u escape")
        }
        guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
        buffer.append(contentsOf: Array(String(Character(unicode)).utf8))
    }

    private mutating func parseHex4() throws(JSONSyntaxError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = current, let digit = Hex.digitValue(byte) else {
                throw error("expected four hex digits in a \\u escape")
            }
            value = value << 4 | UInt32(digit)
            advance()
        }
        return value
    }

    // MARK: - Numbers

    private mutating func parseNumber() throws(JSONSyntaxError) -> JSONNode {
        let start = location
        let startIndex = index
        if current == UInt8(ascii: "-") { advance() }
        guard let first = current, isDigit(first) else { throw error("expected a digit") }
        if first == UInt8(ascii: "0") {
            advance()
            if let next = current, isDigit(next) { throw error("leading zeros are not allowed in numbers", at: start) }
        } else {
            while let byte = current, isDigit(byte) { advance() }
        }
        if current == UInt8(ascii: ".") {
            advance()
            guard let byte = current, isDigit(byte) else { throw error("expected a digit after '.'") }
            while let byte = current, isDigit(byte) { advance() }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            advance()
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { advance() }
            guard let byte = current, isDigit(byte) else { throw error("expected a digit in the exponent") }
            while let byte = current, isDigit(byte) { advance() }
        }
        if let byte = current, isIdentifierByte(byte) || byte == UInt8(ascii: ".") {
            throw error("unexpected \(describeCurrent()) in a number")
        }
        let text = String(decoding: bytes[startIndex..<index], as: UTF8.self)
        return JSONNode(.number(JSONNumber(text: text)), at: start)
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
}
