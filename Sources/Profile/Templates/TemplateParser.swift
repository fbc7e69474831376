import Bluetooth

extension Template {
    /// The deepest nesting of calls and parentheses accepted in an expression.
    static let maximumDepth = 32

    /// Parses a template; throws the first syntax error with its offset.
    public static func parse(_ source: String, kind: Kind) throws(TemplateSyntaxError) -> Template {
        var parser = TemplateParser(characters: Array(source), kind: kind)
        let parts = try parser.parseParts()
        return Template(source: source, kind: kind, parts: parts)
    }

    /// A template that renders `bytes` verbatim.
    public static func literal(_ bytes: [UInt8]) -> Template {
        Template(source: bytes.hexString(separator: " "), kind: .bytes, parts: [.literal(bytes)])
    }
}

private struct TemplateParser {
    let characters: [Character]
    let kind: Template.Kind
    var index = 0
    var depth = 0

    init(characters: [Character], kind: Template.Kind) {
        self.characters = characters
        self.kind = kind
    }

    var current: Character? { index < characters.count ? characters[index] : nil }

    /// `Character.isWhitespace`, answered without a Unicode property lookup for ASCII.
    static func isSpace(_ character: Character) -> Bool {
        if let ascii = character.asciiValue { return ascii == 0x20 || (0x09...0x0D).contains(ascii) }
        return character.isWhitespace
    }

    /// An ASCII letter (names are ASCII).
    static func isLetter(_ character: Character) -> Bool {
        guard let ascii = character.asciiValue else { return false }
        return (0x41...0x5A).contains(ascii) || (0x61...0x7A).contains(ascii)
    }

    /// An ASCII digit.
    static func isDigit(_ character: Character) -> Bool {
        guard let ascii = character.asciiValue else { return false }
        return (0x30...0x39).contains(ascii)
    }

    func error(_ message: String, at offset: Int? = nil, hint: String? = nil) -> TemplateSyntaxError {
        TemplateSyntaxError(message: message, offset: offset ?? index, hint: hint)
    }

    mutating func parseParts() throws(TemplateSyntaxError) -> [TemplatePart] {
        var parts: [TemplatePart] = []
        var literal: [UInt8] = []
        func flush() {
            if !literal.isEmpty {
                parts.append(.literal(literal))
                literal = []
            }
        }
        while let character = current {
            if character == "{" {
                if kind == .text, index + 1 < characters.count, characters[index + 1] == "{" {
                    literal.append(contentsOf: Array("{".utf8))
                    index += 2
                    continue
                }
                flush()
                let start = index
                index += 1
                skipSpaces()
                let expression = try parseExpression()
                skipSpaces()
                guard current == "}" else {
                    if current == nil { throw error("'{' is not closed", at: start) }
                    throw error("unexpected '\(current.map(String.init) ?? "")' in expression, expected '}'")
                }
                index += 1
                parts.append(.expression(expression, offset: start))
            } else if character == "}" {
                if kind == .text, index + 1 < characters.count, characters[index + 1] == "}" {
                    literal.append(contentsOf: Array("}".utf8))
                    index += 2
                    continue
                }
                throw error("unmatched '}'", hint: kind == .text ? "write '}}' for a literal brace" : nil)
            } else if kind == .text {
                literal.append(contentsOf: Array(String(character).utf8))
                index += 1
            } else if Self.isSpace(character) {
                index += 1
            } else {
                literal.append(contentsOf: try parseHexRun())
            }
        }
        flush()
        return parts
    }

    /// A run of hex digits (optionally `0x`-prefixed) outside braces: an even number of digits.
    mutating func parseHexRun() throws(TemplateSyntaxError) -> [UInt8] {
        let start = index
        if current == "0", index + 1 < characters.count, characters[index + 1] == "x" || characters[index + 1] == "X" {
            index += 2
        }
        var nibbles: [UInt8] = []
        while let character = current, !Self.isSpace(character), character != "{" {
            guard let ascii = character.asciiValue, let digit = Hex.digitValue(ascii) else {
                throw error(
                    "'\(character)' is not a hex digit",
                    hint: character.isLetter
                        ? "put names and functions in braces, e.g. {\(identifierAt(index))}" : nil)
            }
            nibbles.append(digit)
            index += 1
        }
        guard !nibbles.isEmpty else { throw error("expected hex digits after 0x", at: start) }
        guard nibbles.count % 2 == 0 else {
            throw error("odd number of hex digits", at: start, hint: "write each byte as two digits, e.g. 0F")
        }
        return stride(from: 0, to: nibbles.count, by: 2).map { nibbles[$0] << 4 | nibbles[$0 + 1] }
    }

    /// The run of letters and digits around `offset`, for hints.
    func identifierAt(_ offset: Int) -> String {
        let isWordCharacter = { (c: Character) in c.isLetter || c.isNumber }
        var begin = offset
        while begin > 0, isWordCharacter(characters[begin - 1]) { begin -= 1 }
        var end = offset
        while end < characters.count, isWordCharacter(characters[end]) { end += 1 }
        return String(characters[begin..<end])
    }

    mutating func skipSpaces() {
        while let character = current, character == " " || character == "\t" { index += 1 }
    }

    // MARK: Expressions

    mutating func parseExpression() throws(TemplateSyntaxError) -> TemplateExpression {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Template.maximumDepth else { throw error("expression is nested too deeply") }
        var lhs = try parseTerm()
        while true {
            skipSpaces()
            guard let character = current, character == "+" || character == "-" else { return lhs }
            let offset = index
            index += 1
            skipSpaces()
            let rhs = try parseTerm()
            lhs = .binary(character == "+" ? .add : .subtract, lhs, rhs, offset: offset)
        }
    }

    mutating func parseTerm() throws(TemplateSyntaxError) -> TemplateExpression {
        var lhs = try parsePrimary()
        while true {
            skipSpaces()
            guard current == "*" else { return lhs }
            let offset = index
            index += 1
            skipSpaces()
            let rhs = try parsePrimary()
            lhs = .binary(.multiply, lhs, rhs, offset: offset)
        }
    }

    mutating func parsePrimary() throws(TemplateSyntaxError) -> TemplateExpression {
        skipSpaces()
        let start = index
        guard let character = current else { throw error("unexpected end of template, expected an expression") }
        if character == "(" {
            index += 1
            depth += 1
            defer { depth -= 1 }
            guard depth <= Template.maximumDepth else { throw error("expression is nested too deeply") }
            let inner = try parseExpression()
            skipSpaces()
            guard current == ")" else { throw error("expected ')'") }
            index += 1
            return inner
        }
        if character == "\"" { return .string(try parseStringLiteral(), offset: start) }
        if Self.isDigit(character) { return .integer(try parseInteger(), offset: start) }
        guard Self.isLetter(character) || character == "_" else {
            throw error("unexpected '\(character)', expected a number, a string, a name or a function call")
        }
        let name = parseIdentifier()
        skipSpaces()
        if current == "(" {
            index += 1
            var arguments: [TemplateExpression] = []
            skipSpaces()
            if current == ")" {
                index += 1
                return .call(name, arguments, offset: start)
            }
            while true {
                arguments.append(try parseExpression())
                skipSpaces()
                if current == "," {
                    index += 1
                    continue
                }
                guard current == ")" else { throw error("expected ',' or ')' in the arguments of \(name)()") }
                index += 1
                return .call(name, arguments, offset: start)
            }
        }
        if current == "[" {
            index += 1
            skipSpaces()
            let lower = try parseInteger()
            skipSpaces()
            if current == "]" {
                index += 1
                return .index(name, lower, offset: start)
            }
            guard current == ".", index + 1 < characters.count, characters[index + 1] == "." else {
                throw error("expected ']' or '..' in \(name)[…]")
            }
            index += 2
            skipSpaces()
            if current == "]" {
                index += 1
                return .slice(name, lower, nil, offset: start)
            }
            let upperOffset = index
            let upper = try parseInteger()
            skipSpaces()
            guard current == "]" else { throw error("expected ']'") }
            index += 1
            guard upper >= lower else {
                throw error(
                    "slice end \(upper) is before its start \(lower)", at: upperOffset,
                    hint: "ranges are inclusive: request[4..19] is 16 bytes")
            }
            return .slice(name, lower, upper, offset: start)
        }
        return .name(name, offset: start)
    }

    mutating func parseIdentifier() -> String {
        var name = ""
        while let character = current, Self.isLetter(character) || Self.isDigit(character) || character == "_" {
            name.append(character)
            index += 1
        }
        return name
    }

    mutating func parseInteger() throws(TemplateSyntaxError) -> Int {
        let start = index
        var text = ""
        var radix = 10
        if current == "0", index + 1 < characters.count, characters[index + 1] == "x" || characters[index + 1] == "X" {
            radix = 16
            index += 2
        }
        while let character = current, character.isASCII, character.isHexDigit, radix == 16 || Self.isDigit(character) {
            text.append(character)
            index += 1
        }
        if let character = current, Self.isLetter(character) || character == "_" {
            throw error("unexpected '\(character)' in a number", hint: radix == 10 ? "hex numbers start with 0x" : nil)
        }
        guard !text.isEmpty else { throw error("expected a number", at: start) }
        guard let value = Int(text, radix: radix) else { throw error("number \(text) is too large", at: start) }
        return value
    }

    mutating func parseStringLiteral() throws(TemplateSyntaxError) -> String {
        let start = index
        index += 1
        var text = ""
        while let character = current {
            index += 1
            switch character {
            case "\"": return text
            case "\\":
                guard let escaped = current else { break }
                index += 1
                switch escaped {
                case "n": text.append("\n")
                case "t": text.append("\t")
                case "r": text.append("\r")
                case "0": text.append("\0")
                default: text.append(escaped)
                }
            default: text.append(character)
            }
        }
        throw error("string literal is not closed", at: start)
    }
}
