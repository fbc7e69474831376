import Foundation
import Testing
import TextEscaping

@testable import Profile

/// "A hostile profile changes nothing": every profile in `Fixtures/hostile` (see its README) either fails
/// validation with located diagnostics, or loads and, driven through the engine for 10,000 events, stays
/// within the documented limits. Inputs too big to commit are generated here.
@Suite struct HostileProfileTests {
    struct Case: Sendable, CustomTestStringConvertible {
        /// The attack the profile represents.
        var attack: String
        var file: String
        /// The diagnostics (file relative to the folder), in order; empty when the profile must load.
        var rejected: [String] = []
        /// When it loads: a log line that must appear while it is driven (a limit was hit and said so).
        var logs: String?
        /// When it loads: most `.log` effects the whole drive may produce (logged once, not per event).
        var maximumLogs: Int?

        var testDescription: String { "\(attack) (\(file))" }
    }

    static let cases: [Case] = [
        Case(attack: "catastrophic-backtracking regex", file: "regex-bomb.json"),
        Case(
            attack: "regex backreference", file: "regex-backreference.json",
            rejected: [
                #"regex-backreference.json:8:54 rules[0].on.regex: invalid regular expression: backreferences (\1) are not supported"#
            ]),
        Case(
            attack: "regex lookaround", file: "regex-lookaround.json",
            rejected: [
                #"regex-lookaround.json:8:50 rules[0].on.regex: invalid regular expression: lookahead "(?=" is not supported"#
            ]),
        Case(
            attack: "regex {m,n} expansion bomb", file: "regex-huge-repetition.json",
            rejected: [
                "regex-huge-repetition.json:8:51 rules[0].on.regex: invalid regular expression: the pattern is too large once its repetitions are expanded (over 2000 steps) (use smaller {m,n} counts, or * and +)"
            ]),
        Case(
            attack: "state that doubles on every write", file: "state-doubling.json",
            logs: #"rules[0].do[0].set.buf: the value for "buf" reached a limit and was cut"#),
        Case(
            attack: "characteristic value that doubles itself", file: "value-self-doubling.json",
            logs: #"rules[0].do[0].setValue: the value for "big" is"#),
        Case(
            attack: "fill counts growing in state", file: "fill-from-state.json",
            logs: "rules[0].do[1].notify: a template value reached a limit and was cut"),
        Case(
            attack: "fill of 100 MB", file: "fill-literal-huge.json",
            rejected: [
                "fill-literal-huge.json:8:68 rules[0].do.reply: fill count 100000000 exceeds 512"
            ]),
        Case(
            attack: "pad to 100 MB", file: "pad-literal-huge.json",
            rejected: [
                "pad-literal-huge.json:8:67 rules[0].do.reply: pad length 100000000 exceeds 512"
            ]),
        Case(
            attack: "reply literal over the attribute limit", file: "reply-literal-too-long.json",
            rejected: [
                "reply-literal-too-long.json:8:67 rules[0].do.reply.hex: value is 600 bytes, over the 512-byte attribute limit"
            ]),
        Case(
            attack: "notify longer than maxLength", file: "notify-over-maxlength.json",
            rejected: [
                #"notify-over-maxlength.json:9:76 rules[0].do[0].value: value is at least 24 bytes, longer than maxLength 20 of "tx""#
            ]),
        Case(
            attack: "state literal over the value limit", file: "state-literal-too-long.json",
            rejected: [
                "state-literal-too-long.json:8:22 state.blob: value is 4097 bytes, over the 4096-byte limit for values"
            ]),
        Case(
            attack: "every: 0 timer", file: "timer-every-zero.json",
            rejected: [
                "timer-every-zero.json:8:40 timers[0].every: a timer needs at least 10 ms, not 0 (timers fire at most every 10 ms)"
            ]),
        Case(
            attack: "negative and sub-minimum timers", file: "timer-after-negative.json",
            rejected: [
                "timer-after-negative.json:8:40 timers[0].after: -5 is out of range 0...86400000",
                "timer-after-negative.json:8:71 timers[1].after: a timer needs at least 10 ms, not 1 (timers fire at most every 10 ms)",
                "timer-after-negative.json:9:108 rules[0].do[1].after: a timer needs at least 10 ms, not 0 (timers fire at most every 10 ms)",
            ]),
        Case(
            attack: "durations over 24 hours", file: "timer-too-long.json",
            rejected: [
                #"timer-too-long.json:8:41 timers[0].after: "100000s" is longer than 24 hours (86400000 ms)"#,
                "timer-too-long.json:8:80 timers[1].every: 86400001 is out of range 0...86400000",
                #"timer-too-long.json:9:58 rules[0].do.delay: "90000000ms" is longer than 24 hours (86400000 ms)"#,
            ]),
        Case(
            attack: "zero, negative and huge durations from variables", file: "timer-from-variables.json",
            logs: "timer spin: period is 0 ms, outside 10…86400000; using 10 ms", maximumLogs: 4),
        Case(attack: "long delays after every reply", file: "delay-chain.json"),
        Case(
            attack: "JSON matcher on deeply nested writes", file: "json-matcher-nesting.json",
            logs: #"rules[1].do.notify: the value for "tx" is 512 bytes, cut to its maximum of 20"#),
        Case(
            attack: "extends itself", file: "extends-self.json",
            rejected: [
                "extends-self.json:1:3 extends: extends cycle: extends-self.json → extends-self.json"
            ]),
        Case(
            attack: "extends cycle", file: "extends-cycle-a.json",
            rejected: [
                "extends-cycle-b.json:2:3 extends: extends cycle: extends-cycle-a.json → extends-cycle-b.json → extends-cycle-a.json"
            ]),
        Case(
            attack: "extends an absolute path", file: "extends-absolute.json",
            rejected: [
                #"extends-absolute.json:2:3 extends: "/etc/shadow.json" is an absolute path; extends takes a path relative to this file (a base must be in the profile's folder unless allowed (--allow-extends-outside))"#
            ]),
        Case(
            attack: "extends escapes the folder with ..", file: "extends-escape.json",
            rejected: [
                #"extends-escape.json:2:3 extends: "../../../../../../../../etc/passwd.json" is outside the profile's folder (a base must be in the profile's folder unless allowed (--allow-extends-outside))"#
            ]),
        Case(
            attack: "extends a file that is not JSON", file: "extends-not-json.json",
            rejected: [
                #"extends-not-json.json:2:3 extends: "/etc/shadow" is not a .json file; extends only reads .json profiles"#
            ]),
        Case(
            attack: "fault rewrites growing values, and a 600-byte match", file: "rewrite-too-long.json",
            rejected: ["rewrite-too-long.json:9:57 faults[1].rewrite: match: 600 bytes, over the 512-byte value limit"]),
        Case(
            attack: "NUL, BEL and ESC in names and keys", file: "control-characters.json",
            rejected: [
                #"control-characters.json:3:18 variables["bell\u{7}"]: "bell\u{7}" is not a valid name (use letters, digits and '_', starting with a letter)"#,
                #"control-characters.json:3:35 variables["esc\u{1B}[2J"]: "esc\u{1B}[2J" is not a valid name (use letters, digits and '_', starting with a letter)"#,
                #"control-characters.json:5:3 ["x\u{0}y"]: unknown key "x\u{0}y""#,
                #"control-characters.json:6:35 rules[0].on.trigger: "t\u{1B}]0;owned\u{7}" is not a valid name (use letters, digits, '_' and '-', starting with a letter)"#,
                #"control-characters.json:6:82 rules[0].do.log: unexpected '\u{0}' in expression, expected '}'"#,
            ]),
    ]

    static var folder: URL {
        get throws { try Paths.fixtures.appendingPathComponent("hostile") }
    }

    @Test(arguments: cases)
    func hostileProfile(_ hostile: Case) throws {
        let folder = try Self.folder
        let path = folder.appendingPathComponent(hostile.file).path
        let found = ProfileValidator.validate(path: path).map { $0.description.replacingOccurrences(of: folder.path + "/", with: "") }
        #expect(found == hostile.rejected)
        #expect(found.allSatisfy { !$0.unicodeScalars.contains(where: TerminalText.needsEscape) })
        guard hostile.rejected.isEmpty else { return }
        let report = try Self.drive(try ProfileLoader.load(path: path))
        if let expected = hostile.logs {
            #expect(report.logs.contains { $0.contains(expected) }, "no log line with \(expected); logs: \(report.logs.prefix(5))")
        }
        if let maximum = hostile.maximumLogs {
            #expect(report.logs.count <= maximum, "\(report.logs)")
        }
    }

    @Test func everyFixtureIsInTheTableAndTheReadme() throws {
        let folder = try Self.folder
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }
        let readme = try String(contentsOf: folder.appendingPathComponent("README.md"), encoding: .utf8)
        let tested = Set(Self.cases.map(\.file)).union(["extends-cycle-b.json"])
        for file in files {
            #expect(tested.contains(file), "\(file) is not in the table")
            #expect(readme.contains("`\(file)`"), "\(file) is not in the README")
        }
    }

    // MARK: Driving the engine

    struct DriveReport {
        var logs: [String] = []
        var events = 0
    }

    /// Connects a central, subscribes it everywhere, then sends 10,000 events (mostly writes of 0–512 bytes
    /// built to trip regexes and JSON parsers, plus reads and every timer), checking the limits after each.
    static func drive(_ profile: DeviceProfile, events: Int = 10_000) throws -> DriveReport {
        var engine = BehaviourEngine(profile: profile, environment: adapter)
        var report = DriveReport()
        let writable = profile.characteristics.filter { $0.has(.write) || $0.has(.writeWithoutResponse) }
        let readable = profile.characteristics.filter { $0.has(.read) }
        let timers = profile.timers.map(\.id)
        var patterns: [BytePattern] = []
        for rule in profile.rules {
            if case .write(_, let matcher) = rule.trigger, let pattern = matcher.regex { patterns.append(pattern) }
        }
        var rng = SeededGenerator(seed: 0x4057)
        func check(_ outcome: EngineOutcome, for event: EngineEvent) {
            report.events += 1
            #expect(outcome.effects.count <= 32, "\(outcome.effects.count) effects for one event")
            for effect in outcome.effects {
                switch effect {
                case .notify(let id, let value, _, _), .setValue(let id, let value):
                    let limit = profile.characteristic(id)?.maxLength ?? ProfileLimits.attributeValueLength
                    if value.count > limit { Issue.record("\(id) got \(value.count) bytes, over \(limit)") }
                case .reply(.value(let value)):
                    if value.count > ProfileLimits.attributeValueLength { Issue.record("a reply of \(value.count) bytes") }
                case .scheduleTimer(let id, let after, _):
                    if after < .milliseconds(ProfileLimits.minimumTimerMilliseconds)
                        || after > .milliseconds(ProfileLimits.maximumDurationMilliseconds)
                    {
                        Issue.record("timer \(id) scheduled after \(after)")
                    }
                case .delay(let duration):
                    if duration < .zero || duration > .milliseconds(ProfileLimits.maximumDurationMilliseconds) {
                        Issue.record("a delay of \(duration)")
                    }
                case .log(let text):
                    report.logs.append(text)
                    if text.utf8.count > ProfileLimits.valueLength + 512 { Issue.record("a log line of \(text.utf8.count) bytes") }
                default: break
                }
            }
            for (name, value) in engine.state.merging(engine.variables, uniquingKeysWith: { a, _ in a }) {
                let size =
                    switch value {
                    case .bytes(let bytes): bytes.count
                    case .string(let text): text.utf8.count
                    case .number, .bool: 0
                    }
                if size > ProfileLimits.valueLength { Issue.record("\(name) holds \(size) bytes") }
            }
            // The engine matched them already; measuring every fifth write keeps the debug-build test quick.
            if case .write(_, _, let value, _) = event, report.events % 5 == 0 {
                for pattern in patterns {
                    let (_, steps) = pattern.search(value)
                    let bound = (value.count + 1) * 2 * pattern.instructionCount
                    if steps > bound { Issue.record("\(pattern) took \(steps) steps on \(value.count) bytes, over \(bound)") }
                }
            }
        }
        check(engine.handle(.connect(phone)), for: .connect(phone))
        for characteristic in profile.characteristics where characteristic.has(.notify) || characteristic.has(.indicate) {
            let event = EngineEvent.subscribe(characteristic: characteristic.id, central: phone)
            check(engine.handle(event), for: event)
        }
        for index in 0..<events {
            let event: EngineEvent
            if index % 10 == 0, !timers.isEmpty {
                event = .timer(timers[(index / 10) % timers.count])
            } else if index % 10 == 1, !readable.isEmpty {
                event = .read(characteristic: readable[index % readable.count].id, central: phone, offset: 0)
            } else if !writable.isEmpty {
                let length = index % 513
                let value: [UInt8] =
                    switch index % 4 {
                    case 0: Array(repeating: UInt8(ascii: "a"), count: max(0, length - 1)) + (length > 0 ? [UInt8(ascii: "!")] : [])
                    case 1: Array(repeating: UInt8(ascii: "x"), count: length)
                    case 2: Array(repeating: UInt8(ascii: "["), count: length)
                    default: rng.bytes(length)
                    }
                event = .write(characteristic: writable[index % writable.count].id, central: phone, value: value, withResponse: true)
            } else {
                event = .trigger("none", arguments: [:])
            }
            check(engine.handle(event), for: event)
        }
        return report
    }

    // MARK: Generated inputs

    @Test func nestingTenThousandLevelsDeep() {
        for open in ["[", "{\"a\":"] {
            let json = String(repeating: open, count: 10_000)
            let found = problems(json)
            #expect(found.count == 1)
            #expect(found.first?.hasSuffix("nesting is deeper than 128 levels") == true, "\(found)")
        }
        let template = "{" + String(repeating: "u8(", count: 10_000) + "1" + String(repeating: ")", count: 10_000) + "}"
        #expect(throws: TemplateSyntaxError.self) { try Template.parse(template, kind: .bytes) }
        let regex = String(repeating: "(", count: 10_000) + "a" + String(repeating: ")", count: 10_000)
        #expect(throws: BytePatternError.self) { try BytePattern(regex) }
        let nestedRegex = String(repeating: "(", count: 400) + "a" + String(repeating: ")", count: 400)
        #expect(throws: BytePatternError.self) { try BytePattern(nestedRegex) }
    }

    static func hundredThousandVariables(duplicateLast: Bool = false) -> String {
        var json = "{ \"format\": 1,\n  \"variables\": {\n"
        for index in 0..<100_000 { json += "    \"v\(index)\": \(index),\n" }
        json += duplicateLast ? "    \"v5\": 1\n" : "    \"last\": 1\n"
        json += "  }\n}\n"
        return json
    }

    /// Duplicate checks are linear (sets): 100k variables validate at once, and a duplicate among them is
    /// reported once, at its key.
    @Test func hundredThousandVariables() throws {
        #expect(problems(Self.hundredThousandVariables()) == [])
        #expect(
            problems(Self.hundredThousandVariables(duplicateLast: true)) == [
                #"test.json:100003:5 variables.v5: duplicate key "v5""#
            ])
        let profile = try loadProfile(Self.hundredThousandVariables())
        #expect(profile.variables.count == 100_001)
        #expect(BehaviourEngine(profile: profile, environment: adapter).variables.count == 100_001)
    }

    /// 20k names that are both variables and state, and 20k misspelt timer references: every one reported,
    /// in linear time ("did you mean" hints stop when their budget is spent).
    @Test func thousandsOfBadReferences() {
        let count = 20_000
        var json = "{ \"format\": 1, \"variables\": {"
        json += (0..<count).map { "\"n\($0)\": 1" }.joined(separator: ", ")
        json += "}, \"state\": {"
        json += (0..<count).map { "\"n\($0)\": 1" }.joined(separator: ", ")
        json += "}, \"timers\": ["
        json += (0..<count).map { "{\"id\": \"timer\($0)\", \"after\": 100}" }.joined(separator: ", ")
        json += "], \"rules\": ["
        json += (0..<count).map { "{\"on\": {\"timer\": \"timre\($0)\"}, \"do\": {\"log\": \"x\"}}" }.joined(separator: ", ")
        json += "]}"
        let found = ProfileValidator.validate(json: json, file: "test.json")
        #expect(found.filter { $0.message.hasSuffix("is both a variable and a state value") }.count == count)
        let unknown = found.filter { $0.message.hasPrefix("unknown timer") }
        #expect(unknown.count == count)
        #expect(unknown.first?.hint == #"did you mean "timer0"?"#)
        #expect(unknown.last?.hint == #"declare it under "timers""#)
    }

    @Test func hugeLiteralsAreRefusedWhereTheyAre() throws {
        let huge = String(repeating: "x", count: 5_000_000)
        #expect(
            problems("{\"format\": 1,\n \"state\": {\"s\": \"\(huge)\"}}") == [
                "test.json:2:17 state.s: value is 5000000 bytes, over the 4096-byte limit for values"
            ])
        let template = String(repeating: "00", count: 5000)
        #expect(
            problems("{\"format\": 1,\n \"device\": {\"name\": \"\(template)\"}}") == [
                "test.json:2:21 device.name: the template is 10000 bytes long, over the 8192-byte limit"
            ])
        let pattern = String(repeating: "a", count: 2000)
        #expect(
            problems(
                #"""
                {"format": 1, "services": [{"id": "s", "uuid": "180f", "characteristics": [{"id": "rx", "uuid": "2a19", "flags": ["write"]}]}],
                 "rules": [{"on": {"write": "rx", "regex": "\#(pattern)"}, "do": {"succeed": true}}]}
                """#) == ["test.json:2:45 rules[0].on.regex: invalid regular expression: the pattern is longer than 1000 characters"])
    }

    @Test func setOverridesOverTheLimitAreRefused() {
        let json = #"{"format": 1, "variables": {"code": "3E", "blob": {"hex": "01"}}}"#
        #expect(
            problems(json, overrides: [("variables.code", String(repeating: "Z", count: 5000))]) == [
                "--set variables.code:1:1 variables.code: value is 5000 bytes, over the 4096-byte limit for values"
            ])
        #expect(
            problems(json, overrides: [("variables.blob", "{\"hex\": \"\(String(repeating: "AB", count: 4097))\"}")]) == [
                "--set variables.blob:1:1 variables.blob: value is 4097 bytes, over the 4096-byte limit for values"
            ])
        #expect(problems(json, overrides: [("variables.code", String(repeating: "Z", count: 4096))]) == [])
    }

    /// Whatever the variables hold, rendering builds at most 4096 bytes per value.
    @Test func renderingIsBoundedWhateverTheValues() throws {
        let big = ProfileValue.bytes(Array(repeating: 0x41, count: 4096))
        var context = TemplateContext(
            variables: ["a": big, "n": .number(Int.max), "t": .string(String(repeating: "é", count: 2048))],
            request: Array(repeating: 7, count: 100_000))
        for source in [
            "{a}{a}{a}", "{utf8(a)}", "{utf8(utf8(a))}", "{reverse(request)}", "{request}{request}", "{fill(1, n)}",
            "{random(n)}", "01 {pad(n)}", "{hex(utf8(a))}", "{t}{t}", "{sum8(a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a)}",
        ] {
            let template = try Template.parse(source, kind: .bytes)
            context.capped = false
            let bytes = template.render(in: &context)
            #expect(bytes.count <= ProfileLimits.valueLength, "\(source): \(bytes.count)")
            let text = try Template.parse(source, kind: .text).renderText(in: &context)
            #expect(text.utf8.count <= ProfileLimits.valueLength, "\(source): \(text.utf8.count)")
        }
        context.capped = false
        _ = try Template.parse("{a}{a}", kind: .bytes).render(in: &context)
        #expect(context.capped)
        context.capped = false
        _ = try Template.parse("{len(a)} {sum8(a)}", kind: .bytes).render(in: &context)
        #expect(!context.capped)
    }
}
