import TextEscaping

/// A regular expression for `"regex"` write matchers, compiled once and matched in linear time.
///
/// It matches Unicode scalars of the value decoded as UTF-8 (invalid UTF-8 never matches), searching for a
/// match anywhere in it. Matching simulates the compiled automaton on all positions at once (a Thompson NFA /
/// Pike VM without captures), so it takes at most `2 × instructionCount` steps per scalar, whatever the
/// pattern and value: there is no backtracking. The syntax is a subset of Swift's `Regex` (profiles/README.md
/// lists it); anything else (backreferences, lookaround, inline options, …) is refused by ``init(_:)``.
public struct BytePattern: Sendable, Equatable, CustomStringConvertible {
    /// The pattern as written.
    public let source: String
    let program: [PatternInstruction]
    let sets: [ScalarSet]

    /// Longest pattern accepted, in Unicode scalars.
    public static let maximumSourceLength = 1000
    /// Most instructions a compiled pattern may have (repetitions such as `{m,n}` are expanded).
    public static let maximumInstructions = 2000
    /// Largest count in a `{m}`, `{m,}` or `{m,n}` quantifier.
    public static let maximumRepetition = 1000
    /// Deepest nesting of groups.
    public static let maximumNesting = 64

    /// Compiles a pattern; the error says what is wrong and at which scalar offset.
    public init(_ source: String) throws(BytePatternError) {
        self.source = source
        var parser = BytePatternParser(source)
        let tree = try parser.parse()
        var compiler = BytePatternCompiler()
        compiler.compile(tree)
        program = compiler.program
        sets = compiler.sets
    }

    public var description: String { source }

    public static func == (a: BytePattern, b: BytePattern) -> Bool { a.source == b.source }

    /// The number of instructions of the compiled program; a match costs at most `2 × instructionCount`
    /// steps per scalar of the value, plus as many.
    public var instructionCount: Int { program.count }

    /// Whether the pattern matches somewhere in `value` decoded as UTF-8 (never, when it is not valid UTF-8).
    public func matches(_ value: [UInt8]) -> Bool {
        search(value).matched
    }

    /// Matches like ``matches(_:)`` and also returns how many steps the automaton took (bounded by
    /// `(scalars + 1) × 2 × instructionCount`).
    public func search(_ value: [UInt8]) -> (matched: Bool, steps: Int) {
        value.withUnsafeBufferPointer { search(in: $0) }
    }

    func search(in bytes: UnsafeBufferPointer<UInt8>) -> (matched: Bool, steps: Int) {
        guard Self.isValidUTF8(bytes) else { return (false, 0) }
        let count = program.count
        // Four arrays of `count`: the current and the next list of threads, the generation that last added each
        // instruction, and the stack of the epsilon closure. Every instruction is in a list at most once.
        return withUnsafeTemporaryAllocation(of: Int32.self, capacity: 4 * count) { buffer in
            program.withUnsafeBufferPointer { program in
                var machine = PikeMachine(program: program, sets: sets, buffer: buffer, end: bytes.count)
                return (machine.run(bytes), machine.steps)
            }
        }
    }

    /// Whether `bytes` is well-formed UTF-8, by the standard library's decoder (what `String(validating:)` accepts).
    static func isValidUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        while index < bytes.count {
            if bytes[index] < 0x80 {
                index += 1
                continue
            }
            var iterator = bytes[index...].makeIterator()
            var decoder = Unicode.UTF8.ForwardParser()
            guard case .valid(let encoded) = decoder.parseScalar(from: &iterator) else { return false }
            index += encoded.count
        }
        return true
    }

    /// The scalar at `index` of valid UTF-8 and its length in bytes.
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> (UInt32, Int) {
        let lead = UInt32(bytes[index])
        if lead < 0x80 { return (lead, 1) }
        func continuation(_ offset: Int) -> UInt32 { UInt32(bytes[index + offset] & 0x3F) }
        if lead < 0xE0 { return ((lead & 0x1F) << 6 | continuation(1), 2) }
        if lead < 0xF0 { return ((lead & 0x0F) << 12 | continuation(1) << 6 | continuation(2), 3) }
        return ((lead & 0x07) << 18 | continuation(1) << 12 | continuation(2) << 6 | continuation(3), 4)
    }
}

/// The simulation of a compiled pattern over one value; see ``BytePattern/search(_:)``.
private struct PikeMachine {
    let program: UnsafeBufferPointer<PatternInstruction>
    let sets: [ScalarSet]
    var current: UnsafeMutablePointer<Int32>
    var next: UnsafeMutablePointer<Int32>
    /// The generation (one per position) that last added each instruction to a list.
    let added: UnsafeMutablePointer<Int32>
    let stack: UnsafeMutablePointer<Int32>
    var currentCount = 0
    var nextCount = 0
    var generation: Int32 = 1
    var steps = 0
    /// The byte length of the value (where `$` holds).
    let end: Int

    init(program: UnsafeBufferPointer<PatternInstruction>, sets: [ScalarSet], buffer: UnsafeMutableBufferPointer<Int32>, end: Int) {
        let count = program.count
        let base = buffer.baseAddress!
        self.program = program
        self.sets = sets
        current = base
        next = base + count
        added = base + 2 * count
        stack = base + 3 * count
        // The lists and the stack are written before they are read (Int32 is a trivial type).
        added.initialize(repeating: 0, count: count)
        self.end = end
    }

    /// Whether the program matches somewhere in `bytes` (valid UTF-8).
    mutating func run(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        if addClosure(0, at: 0) { return true }
        swap(&current, &next)
        currentCount = nextCount
        var position = 0
        while position < bytes.count {
            let (scalar, length) = BytePattern.decode(bytes, at: position)
            let nextPosition = position + length
            generation += 1
            nextCount = 0
            for index in 0..<currentCount {
                let pc = current[index]
                steps += 1
                let consumed: Bool =
                    switch program[Int(pc)] {
                    case .scalar(let expected): scalar == expected
                    case .set(let set): sets[Int(set)].contains(scalar)
                    default: false
                    }
                if consumed, addClosure(pc + 1, at: nextPosition) { return true }
            }
            // The search is unanchored: a match may also start at the next position.
            if addClosure(0, at: nextPosition) { return true }
            swap(&current, &next)
            currentCount = nextCount
            position = nextPosition
        }
        return false
    }

    /// Adds `start` and every instruction reachable from it without consuming a scalar, at byte `position`, to
    /// the next list; true when that reaches `match`.
    mutating func addClosure(_ start: Int32, at position: Int) -> Bool {
        guard added[Int(start)] != generation else { return false }
        added[Int(start)] = generation
        stack[0] = start
        var depth = 1
        while depth > 0 {
            depth -= 1
            let pc = stack[depth]
            steps += 1
            var follow: (Int32, Int32) = (-1, -1)
            switch program[Int(pc)] {
            case .match: return true
            case .jump(let target): follow.0 = target
            case .split(let first, let second): follow = (second, first)
            case .assertStart: if position == 0 { follow.0 = pc + 1 }
            case .assertEnd: if position == end { follow.0 = pc + 1 }
            case .scalar, .set:
                next[nextCount] = pc
                nextCount += 1
            }
            if follow.0 >= 0 { push(follow.0, depth: &depth) }
            if follow.1 >= 0 { push(follow.1, depth: &depth) }
        }
        return false
    }

    /// Puts an instruction on the closure's stack unless this generation already added it.
    @inline(__always)
    func push(_ target: Int32, depth: inout Int) {
        guard added[Int(target)] != generation else { return }
        added[Int(target)] = generation
        stack[depth] = target
        depth += 1
    }
}

/// Why a pattern was refused: a message, the scalar offset in the pattern, and maybe a hint.
public struct BytePatternError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    /// Offset of the offending part, in Unicode scalars from the start of the pattern.
    public var offset: Int
    public var hint: String?

    public var description: String { TerminalText.escaped("at offset \(offset): \(message)") }
}

/// One instruction of a compiled pattern.
enum PatternInstruction: Sendable, Equatable {
    /// Consume one scalar equal to this.
    case scalar(UInt32)
    /// Consume one scalar in `sets[index]`.
    case set(Int32)
    /// Continue at both targets.
    case split(Int32, Int32)
    case jump(Int32)
    /// `^`: only at the start of the value.
    case assertStart
    /// `$`: only at the end of the value.
    case assertEnd
    case match
}

/// A set of Unicode scalars: a bitmap for ASCII, sorted disjoint ranges for the rest.
struct ScalarSet: Sendable, Equatable {
    var low: UInt64 = 0
    var high: UInt64 = 0
    /// Sorted, disjoint, non-adjacent ranges of scalars from 0x80 up.
    var ranges: [ClosedRange<UInt32>] = []

    /// The set of the given (possibly overlapping, unsorted) ranges, or of every scalar outside them.
    init(_ given: [ClosedRange<UInt32>], negated: Bool = false) {
        var merged: [ClosedRange<UInt32>] = []
        for range in given.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, range.lowerBound <= last.upperBound &+ 1 {
                merged[merged.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        if negated {
            var complement: [ClosedRange<UInt32>] = []
            var next: UInt32 = 0
            for range in merged {
                if range.lowerBound > next { complement.append(next...(range.lowerBound - 1)) }
                next = range.upperBound + 1
            }
            if next <= 0x10FFFF { complement.append(next...0x10FFFF) }
            merged = complement
        }
        for range in merged {
            if range.lowerBound < 0x80 {
                for scalar in range.lowerBound...min(range.upperBound, 0x7F) {
                    if scalar < 64 { low |= 1 << UInt64(scalar) } else { high |= 1 << UInt64(scalar - 64) }
                }
            }
            if range.upperBound >= 0x80 { ranges.append(max(range.lowerBound, 0x80)...range.upperBound) }
        }
    }

    func contains(_ scalar: UInt32) -> Bool {
        if scalar < 64 { return low & (1 << UInt64(scalar)) != 0 }
        if scalar < 128 { return high & (1 << UInt64(scalar - 64)) != 0 }
        var lower = 0
        var upper = ranges.count
        while lower < upper {
            let middle = (lower + upper) / 2
            if scalar < ranges[middle].lowerBound {
                upper = middle
            } else if scalar > ranges[middle].upperBound {
                lower = middle + 1
            } else {
                return true
            }
        }
        return false
    }
}
