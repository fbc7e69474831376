import Bluetooth

/// A parsed pattern, before compilation.
indirect enum PatternNode: Equatable {
    case empty
    case scalar(UInt32)
    case set(ScalarSet)
    case start, end
    case concatenation([PatternNode])
    case alternation([PatternNode])
    /// `max` nil: unbounded.
    case repetition(PatternNode, min: Int, max: Int?)

    /// How many instructions ``BytePatternCompiler`` emits for this node.
    var size: Int {
        switch self {
        case .empty: 0
        case .scalar, .set, .start, .end: 1
        case .concatenation(let items): items.reduce(0) { $0 + $1.size }
        case .alternation(let items): items.reduce(0) { $0 + $1.size } + 2 * (items.count - 1)
        case .repetition(let item, let min, let max):
            min * item.size + (max.map { ($0 - min) * (item.size + 1) } ?? (item.size + 2))
        }
    }
}

/// Named sets: `.` and the ASCII classes `\d \w \s`.
extension ScalarSet {
    /// What `.` matches: any scalar but line breaks (`\n \v \f \r`, U+0085, U+2028, U+2029), as Swift's `Regex`.
    static let anyButNewline = ScalarSet([0x0A...0x0D, 0x85...0x85, 0x2028...0x2029], negated: true)
    static let digitRanges: [ClosedRange<UInt32>] = [0x30...0x39]
    static let wordRanges: [ClosedRange<UInt32>] = [0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A]
    static let spaceRanges: [ClosedRange<UInt32>] = [0x09...0x0D, 0x20...0x20]
}

/// Recursive-descent parser of the pattern syntax; its errors carry scalar offsets.
struct BytePatternParser {
    let scalars: [Unicode.Scalar]
    var index = 0
    var depth = 0
    /// The instructions the nodes parsed so far need, checked as they are built.
    var size = 0

    init(_ source: String) {
        scalars = Array(source.unicodeScalars.prefix(BytePattern.maximumSourceLength + 1))
    }

    var current: Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

    func peek(_ offset: Int) -> Unicode.Scalar? { index + offset < scalars.count ? scalars[index + offset] : nil }

    func error(_ message: String, at offset: Int? = nil, hint: String? = nil) -> BytePatternError {
        BytePatternError(message: message, offset: offset ?? index, hint: hint)
    }

    mutating func parse() throws(BytePatternError) -> PatternNode {
        guard scalars.count <= BytePattern.maximumSourceLength else {
            throw error("the pattern is longer than \(BytePattern.maximumSourceLength) characters", at: 0)
        }
        let node = try parseAlternation()
        if current == ")" { throw error("unmatched ')'", hint: "write \\) for a literal parenthesis") }
        try checkSize(node.size + 1, at: 0)  // + match
        return node
    }

    mutating func checkSize(_ size: Int, at offset: Int) throws(BytePatternError) {
        guard size <= BytePattern.maximumInstructions else {
            throw error(
                "the pattern is too large once its repetitions are expanded (over \(BytePattern.maximumInstructions) steps)",
                at: offset, hint: "use smaller {m,n} counts, or * and +")
        }
    }

    mutating func parseAlternation() throws(BytePatternError) -> PatternNode {
        let start = index
        var alternatives = [try parseConcatenation()]
        while current == "|" {
            index += 1
            alternatives.append(try parseConcatenation())
        }
        let node = alternatives.count == 1 ? alternatives[0] : .alternation(alternatives)
        try checkSize(node.size, at: start)
        return node
    }

    mutating func parseConcatenation() throws(BytePatternError) -> PatternNode {
        let start = index
        var items: [PatternNode] = []
        var total = 0
        while let scalar = current, scalar != "|", scalar != ")" {
            let item = try parseQuantified()
            total += item.size
            try checkSize(total, at: start)
            items.append(item)
        }
        return items.count == 1 ? items[0] : items.isEmpty ? .empty : .concatenation(items)
    }

    mutating func parseQuantified() throws(BytePatternError) -> PatternNode {
        let atomStart = index
        let atom = try parseAtom()
        let quantifierStart = index
        guard let quantifier = try parseQuantifier() else { return atom }
        let (min, max) = quantifier
        if scalars[atomStart] == "^" || scalars[atomStart] == "$" {  // a bare anchor; in a group it may be
            throw error("an anchor cannot be repeated", at: quantifierStart)
        }
        switch current {
        case "?": index += 1  // lazy: the same answer to "is there a match?"
        case "+":
            throw error("possessive quantifiers are not supported", hint: "remove the '+' after the quantifier")
        default: break
        }
        if let scalar = current, scalar == "*" || scalar == "+" || scalar == "?" || (scalar == "{" && isQuantifierBrace()) {
            throw error("a quantifier cannot follow another", hint: "put the repeated part in a group: (?:a{2}){3}")
        }
        let node = PatternNode.repetition(atom, min: min, max: max)
        try checkSize(node.size, at: atomStart)
        return node
    }

    /// `* + ? {m} {m,} {m,n} {,n}` at the current position, or nil (a `{` that is not a quantifier is a literal).
    mutating func parseQuantifier() throws(BytePatternError) -> (Int, Int?)? {
        switch current {
        case "*":
            index += 1
            return (0, nil)
        case "+":
            index += 1
            return (1, nil)
        case "?":
            index += 1
            return (0, 1)
        case "{" where isQuantifierBrace():
            let start = index
            index += 1
            let low = parseNumber()
            var high = low
            if current == "," {
                index += 1
                high = parseNumber()
            }
            index += 1  // }
            let min = low ?? 0
            for count in [min, high ?? 0] where count > BytePattern.maximumRepetition {
                throw error("repetition count \(count) is over \(BytePattern.maximumRepetition)", at: start)
            }
            if let high, high < min {
                throw error("repetition {\(min),\(high)} has its maximum below its minimum", at: start)
            }
            return (min, high)
        default:
            return nil
        }
    }

    /// Whether the `{` here starts `{m}`, `{m,}`, `{m,n}` or `{,n}` (Swift's `Regex` reads any other `{` literally).
    func isQuantifierBrace() -> Bool {
        var offset = 1
        var digitsBefore = 0
        var digitsAfter = 0
        var comma = false
        while let scalar = peek(offset) {
            switch scalar {
            case "0"..."9": if comma { digitsAfter += 1 } else { digitsBefore += 1 }
            case "," where !comma: comma = true
            case "}": return digitsBefore > 0 || (comma && digitsAfter > 0)
            default: return false
            }
            offset += 1
        }
        return false
    }

    /// Decimal digits at the current position (capped, so huge counts do not overflow), or nil if none.
    mutating func parseNumber() -> Int? {
        var value: Int?
        while let scalar = current, ("0"..."9").contains(scalar) {
            value = min((value ?? 0) * 10 + Int(scalar.value - 0x30), 1_000_000)
            index += 1
        }
        return value
    }

    mutating func parseAtom() throws(BytePatternError) -> PatternNode {
        guard let scalar = current else { throw error("unexpected end of the pattern") }
        switch scalar {
        case "(": return try parseGroup()
        case "[": return try parseClass()
        case ".":
            index += 1
            return .set(.anyButNewline)
        case "^":
            index += 1
            return .start
        case "$":
            index += 1
            return .end
        case "\\":
            return try parseEscape()
        case "*", "+", "?":
            throw error("'\(scalar)' has nothing to repeat", hint: "write \\\(scalar) for a literal '\(scalar)'")
        case "{" where isQuantifierBrace():
            throw error("a quantifier has nothing to repeat", hint: "write \\{ for a literal '{'")
        default:
            index += 1
            return .scalar(scalar.value)
        }
    }

    mutating func parseGroup() throws(BytePatternError) -> PatternNode {
        let start = index
        index += 1
        if current == "?" {
            let kind = peek(1)
            switch kind {
            case ":":
                index += 2
            case "<" where peek(2).map { $0 != "=" && $0 != "!" } ?? false, "P" where peek(2) == "<":
                // A named group: matched as a plain group (captures are not kept).
                while let scalar = current, scalar != ">" { index += 1 }
                guard current == ">" else { throw error("the group name is not closed", at: start) }
                index += 1
            case "=", "!":
                throw error("lookahead \"(?\(kind!)\" is not supported", at: start)
            case "<":
                throw error("lookbehind \"(?<\(peek(2)!)\" is not supported", at: start)
            case ">":
                throw error("atomic groups \"(?>\" are not supported", at: start)
            case "#":
                throw error("comments \"(?#\" are not supported", at: start)
            default:
                throw error(
                    "inline options and other \"(?\" groups are not supported", at: start,
                    hint: "only (…), (?:…) and (?<name>…) groups are")
            }
        }
        depth += 1
        defer { depth -= 1 }
        guard depth <= BytePattern.maximumNesting else {
            throw error("groups are nested deeper than \(BytePattern.maximumNesting) levels", at: start)
        }
        let inner = try parseAlternation()
        guard current == ")" else { throw error("'(' is not closed", at: start) }
        index += 1
        return inner
    }

    // MARK: Escapes

    /// A single scalar an escape stands for, or nil when the escape is not a single scalar.
    mutating func parseScalarEscape(inClass: Bool) throws(BytePatternError) -> UInt32? {
        let start = index - 1
        guard let scalar = current else { throw error("the pattern ends with a backslash", at: start) }
        switch scalar {
        case "n":
            index += 1
            return 0x0A
        case "t":
            index += 1
            return 0x09
        case "r":
            index += 1
            return 0x0D
        case "f":
            index += 1
            return 0x0C
        case "e":
            index += 1
            return 0x1B
        case "a":
            index += 1
            return 0x07
        case "b" where inClass:
            index += 1
            return 0x08
        case "0":
            index += 1
            if let next = current, ("0"..."9").contains(next) {
                throw error("octal escapes are not supported", at: start, hint: "write \\xHH")
            }
            return 0
        case "x", "u":
            index += 1
            return try parseHexEscape(start: start, kind: scalar)
        case _ where scalar.isASCII && !isASCIIAlphanumeric(scalar):
            index += 1
            return scalar.value
        default:
            return nil
        }
    }

    /// `\xHH`, `\x{H…}`, `\uHHHH` or `\u{H…}`, after the letter.
    mutating func parseHexEscape(start: Int, kind: Unicode.Scalar) throws(BytePatternError) -> UInt32 {
        var value: UInt32 = 0
        var digits = 0
        func digit(_ scalar: Unicode.Scalar?) -> UInt32? {
            guard let scalar, scalar.isASCII, let value = Hex.digitValue(UInt8(scalar.value)) else { return nil }
            return UInt32(value)
        }
        if current == "{" {
            index += 1
            while let next = digit(current), digits < 8 {
                value = value << 4 | next
                digits += 1
                index += 1
            }
            guard digits > 0, current == "}" else {
                throw error("expected hex digits and '}' in \\\(kind){…}", at: start)
            }
            index += 1
        } else {
            let wanted = kind == "x" ? 2 : 4
            while digits < wanted, let next = digit(current) {
                value = value << 4 | next
                digits += 1
                index += 1
            }
            guard digits == wanted else {
                throw error(
                    "\\\(kind) needs \(wanted) hex digits", at: start,
                    hint: kind == "x" ? "write \\x0A, or \\x{A}" : "write \\u000A, or \\u{A}")
            }
        }
        guard Unicode.Scalar(value) != nil else {
            throw error("U+\(String(value, radix: 16, uppercase: true)) is not a Unicode scalar", at: start)
        }
        return value
    }

    /// `\d \w \s` and their negations as a set (ranges, negated), or nil.
    mutating func parseClassEscape() -> ([ClosedRange<UInt32>], Bool)? {
        let ranges: [ClosedRange<UInt32>]
        switch current {
        case "d", "D": ranges = ScalarSet.digitRanges
        case "w", "W": ranges = ScalarSet.wordRanges
        case "s", "S": ranges = ScalarSet.spaceRanges
        default: return nil
        }
        let negated = ("A"..."Z").contains(current!)
        index += 1
        return (ranges, negated)
    }

    /// The error for an escape that is neither a scalar nor a class.
    func unsupportedEscape(start: Int) -> BytePatternError {
        let letter = current.map { String($0) } ?? ""
        switch current ?? " " {
        case "1"..."9", "k", "g":
            return error("backreferences (\\\(letter)) are not supported", at: start)
        case "b", "B":
            return error("word boundaries (\\\(letter)) are not supported", at: start)
        case "A", "z", "Z", "G":
            return error("the anchor \\\(letter) is not supported", at: start, hint: "use ^ and $")
        case "p", "P":
            return error("Unicode properties (\\\(letter){…}) are not supported", at: start)
        case "v", "V", "h", "H", "R", "X", "N", "K", "Q", "E", "c", "o":
            return error("\\\(letter) is not supported", at: start, hint: "write the characters, or \\xHH")
        default:
            return error("unknown escape \\\(letter)", at: start, hint: "escape only punctuation; letters have meanings")
        }
    }

    mutating func parseEscape() throws(BytePatternError) -> PatternNode {
        let start = index
        index += 1
        if let (ranges, negated) = parseClassEscape() { return .set(ScalarSet(ranges, negated: negated)) }
        if let scalar = try parseScalarEscape(inClass: false) { return .scalar(scalar) }
        throw unsupportedEscape(start: start)
    }

    func isASCIIAlphanumeric(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
    }

    // MARK: Classes

    mutating func parseClass() throws(BytePatternError) -> PatternNode {
        let start = index
        index += 1
        var negated = false
        if current == "^" {
            negated = true
            index += 1
        }
        if current == "]" {
            throw error("empty character class", at: start, hint: "write \\] for a literal ']'")
        }
        var ranges: [ClosedRange<UInt32>] = []
        /// The previous member, when it was a single scalar that may start a range.
        var rangeStart: UInt32?
        while true {
            guard let scalar = current else { throw error("'[' is not closed", at: start) }
            let memberStart = index
            switch scalar {
            case "]":
                index += 1
                return .set(ScalarSet(ranges, negated: negated))
            case "[":
                throw error("nested and POSIX classes are not supported", hint: "write \\[ for a literal '['")
            case "&" where peek(1) == "&", "~" where peek(1) == "~", "-" where peek(1) == "-":
                throw error(
                    "class set operations (\(scalar)\(scalar)) are not supported", hint: "write \\\(scalar) for a literal '\(scalar)'")
            case "-" where rangeStart != nil && peek(1) != nil && peek(1) != "]":
                index += 1
                let upper: UInt32
                if current == "\\" {
                    index += 1
                    guard parseClassEscape() == nil, let value = try parseScalarEscape(inClass: true) else {
                        throw error("a range must end with a single character", at: memberStart)
                    }
                    upper = value
                } else if current == "[" {
                    throw error("nested and POSIX classes are not supported", hint: "write \\[ for a literal '['")
                } else {
                    upper = current!.value
                    index += 1
                }
                let lower = rangeStart!
                guard lower <= upper else {
                    throw error(
                        "the range is reversed (U+\(String(lower, radix: 16, uppercase: true)) > U+\(String(upper, radix: 16, uppercase: true)))",
                        at: memberStart)
                }
                ranges[ranges.count - 1] = lower...upper
                rangeStart = nil
            case "\\":
                index += 1
                if let (set, negatedSet) = parseClassEscape() {
                    if current == "-", let next = peek(1), next != "]" {
                        throw error("a range must start with a single character", at: memberStart)
                    }
                    ranges += negatedSet ? ScalarSet.complement(of: set) : set
                    rangeStart = nil
                } else if let value = try parseScalarEscape(inClass: true) {
                    ranges.append(value...value)
                    rangeStart = value
                } else {
                    throw unsupportedEscape(start: memberStart)
                }
            default:
                index += 1
                ranges.append(scalar.value...scalar.value)
                rangeStart = scalar.value
            }
        }
    }
}

extension ScalarSet {
    /// The scalars outside `ranges` (sorted and disjoint).
    static func complement(of ranges: [ClosedRange<UInt32>]) -> [ClosedRange<UInt32>] {
        var result: [ClosedRange<UInt32>] = []
        var next: UInt32 = 0
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if range.lowerBound > next { result.append(next...(range.lowerBound - 1)) }
            next = max(next, range.upperBound + 1)
        }
        if next <= 0x10FFFF { result.append(next...0x10FFFF) }
        return result
    }
}

/// Emits the instructions of a parsed pattern: a Thompson construction, with counted repetitions expanded.
struct BytePatternCompiler {
    var program: [PatternInstruction] = []
    var sets: [ScalarSet] = []

    mutating func compile(_ node: PatternNode) {
        program.reserveCapacity(node.size + 1)
        emit(node)
        program.append(.match)
    }

    var here: Int32 { Int32(program.count) }

    mutating func emit(_ node: PatternNode) {
        switch node {
        case .empty:
            break
        case .scalar(let scalar):
            program.append(.scalar(scalar))
        case .set(let set):
            if let existing = sets.firstIndex(of: set) {
                program.append(.set(Int32(existing)))
            } else {
                program.append(.set(Int32(sets.count)))
                sets.append(set)
            }
        case .start:
            program.append(.assertStart)
        case .end:
            program.append(.assertEnd)
        case .concatenation(let items):
            for item in items { emit(item) }
        case .alternation(let items):
            // split L1, next; L1: a; jump end; next: split L2, next2; … last alternative; end:
            var jumps: [Int] = []
            for (position, item) in items.enumerated() {
                if position < items.count - 1 {
                    let split = program.count
                    program.append(.split(here + 1, 0))
                    emit(item)
                    jumps.append(program.count)
                    program.append(.jump(0))
                    program[split] = .split(Int32(split + 1), here)
                } else {
                    emit(item)
                }
            }
            for jump in jumps { program[jump] = .jump(here) }
        case .repetition(let item, let min, let max):
            for _ in 0..<min { emit(item) }
            if let max {
                // x? nested (max - min) times: split body, end; body: x; split …
                var splits: [Int] = []
                for _ in min..<max {
                    splits.append(program.count)
                    program.append(.split(here + 1, 0))
                    emit(item)
                }
                for split in splits { program[split] = .split(Int32(split + 1), here) }
            } else {
                // loop: split body, end; body: x; jump loop; end:
                let loop = program.count
                program.append(.split(here + 1, 0))
                emit(item)
                program.append(.jump(Int32(loop)))
                program[loop] = .split(Int32(loop + 1), here)
            }
        }
    }
}
