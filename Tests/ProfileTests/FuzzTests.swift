import Foundation
import Testing

@testable import Profile

/// Deterministic fuzzing: random and mutated inputs must never trap the parser, loader, templates or engine.
/// A trap would crash the test process, so reaching the end of each test is the assertion; the counts
/// check that the inputs exercised both the success and the failure paths.
@Suite struct FuzzTests {
    static let shipped = ["noke-lock.json", "leaf-reader.json", "bleproof.json"].compactMap {
        FileManager.default.contents(atPath: Paths.profile($0)).map { [UInt8]($0) }
    }

    static func mutate(_ input: [UInt8], _ rng: inout SeededGenerator) -> [UInt8] {
        var bytes = input
        let interesting: [[UInt8]] = [
            Array("{".utf8), Array("}".utf8), Array("[".utf8), Array("]".utf8), Array("\"".utf8), Array(",".utf8),
            Array(":".utf8), Array("\\u".utf8), Array("1e999999".utf8), Array("-".utf8), [0xFF], [0xC3], [0x00],
            Array("{request[".utf8), Array("{pad(".utf8), Array("\"notify\"".utf8), Array("null".utf8),
        ]
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            guard !bytes.isEmpty else {
                bytes = interesting.randomElement(using: &rng) ?? []
                continue
            }
            let position = Int.random(in: 0..<bytes.count, using: &rng)
            switch Int.random(in: 0..<5, using: &rng) {
            case 0: bytes[position] = UInt8.random(in: 0...255, using: &rng)
            case 1: bytes.insert(contentsOf: interesting.randomElement(using: &rng) ?? [], at: position)
            case 2: bytes.removeSubrange(position..<min(bytes.count, position + Int.random(in: 1...16, using: &rng)))
            case 3: bytes = Array(bytes.prefix(position))
            default:
                let end = min(bytes.count, position + Int.random(in: 1...64, using: &rng))
                bytes.insert(contentsOf: bytes[position..<end], at: Int.random(in: 0...bytes.count, using: &rng))
            }
        }
        return bytes
    }

    @Test func parserAndLoaderSurviveMutatedProfiles() throws {
        #expect(Self.shipped.count == 3)
        var rng = SeededGenerator(seed: 0x5EED)
        var parsed = 0
        var rejected = 0
        for iteration in 0..<1500 {
            let base = Self.shipped[iteration % Self.shipped.count]
            let input = Self.mutate(base, &rng)
            if (try? JSONParser.parse(input, file: "fuzz.json")) != nil { parsed += 1 }
            let (profile, diagnostics) = ProfileLoader.analyze(bytes: input, file: "fuzz.json", overrides: [])
            if diagnostics.isEmpty, let profile {
                var engine = BehaviourEngine(profile: profile, environment: adapter)
                for characteristic in profile.characteristics {
                    _ = engine.handle(.write(characteristic: characteristic.id, central: phone, value: rng.bytes(20), withResponse: true))
                    _ = engine.handle(.read(characteristic: characteristic.id, central: phone, offset: 0))
                }
            } else {
                rejected += 1
                #expect(diagnostics.allSatisfy { $0.line >= 1 && $0.column >= 1 && !$0.message.isEmpty })
            }
        }
        #expect(parsed > 100)
        #expect(rejected > 100)
    }

    @Test func parserSurvivesRandomBytes() {
        var rng = SeededGenerator(seed: 99)
        let alphabet = Array("{}[]\",:0123456789.eE+-truefalsn \\u\n\t".utf8) + [0xFF, 0xC3, 0xA9, 0x00]
        for _ in 0..<3000 {
            let length = Int.random(in: 0...64, using: &rng)
            let input = (0..<length).map { _ in alphabet.randomElement(using: &rng) ?? 0 }
            _ = try? JSONParser.parse(input, file: "random")
        }
        for depth in [127, 128, 129, 5000] {
            let nested = Array(repeating: UInt8(ascii: "{"), count: depth)
            _ = try? JSONParser.parse(nested, file: "deep")
        }
    }

    @Test func templatesSurviveRandomSources() throws {
        var rng = SeededGenerator(seed: 2024)
        let pieces = [
            "{", "}", "(", ")", "[", "]", "..", ",", " ", "\"", "51", "0x", "7", "99999999999999999999", "-", "+", "*",
            "request", "pad", "random", "counter", "u16le", "u64be", "crc16", "sum8", "len", "hex", "fill", "value",
            "arg", "address", "central", "x", "reverse", "utf8", "\\", "é",
        ]
        var rendered = 0
        for _ in 0..<4000 {
            let source = (0..<Int.random(in: 1...14, using: &rng)).map { _ in pieces.randomElement(using: &rng) ?? "" }.joined()
            for kind in [Template.Kind.bytes, .text] {
                guard let template = try? Template.parse(source, kind: kind) else { continue }
                _ = TemplateChecker(variables: ["x"], state: [], characteristics: ["tx"], usage: .rule).check(template)
                var context = TemplateContext(
                    variables: ["x": .number(Int.random(in: Int.min...Int.max, using: &rng))],
                    adapterAddress: .zero, centralAddress: nil, request: rng.bytes(Int.random(in: 0...30, using: &rng)),
                    counters: ["x": Int.max], generator: SeededGenerator(seed: rng.next()))
                let bytes = template.render(in: &context)
                #expect(bytes.count <= 512 * 64)
                rendered += 1
            }
        }
        #expect(rendered > 500)
    }

    @Test func enginesSurviveRandomEvents() throws {
        var rng = SeededGenerator(seed: 77)
        for name in ["noke-lock.json", "leaf-reader.json", "bleproof.json"] {
            let profile = try ProfileLoader.load(path: Paths.profile(name))
            var engine = BehaviourEngine(profile: profile, environment: adapter)
            let ids = profile.characteristics.map(\.id) + ["unknown"]
            let timers = profile.timers.map(\.id) + ["unknown"]
            let triggers = profile.triggers.map(\.name) + ["unknown"]
            for _ in 0..<1500 {
                let central = Bool.random(using: &rng) ? phone : otherPhone
                let id = ids.randomElement(using: &rng) ?? ""
                let event: EngineEvent
                switch Int.random(in: 0..<8, using: &rng) {
                case 0: event = .connect(central)
                case 1: event = .disconnect(central)
                case 2: event = .read(characteristic: id, central: central, offset: Int.random(in: 0...40, using: &rng))
                case 3: event = .subscribe(characteristic: id, central: central)
                case 4: event = .timer(timers.randomElement(using: &rng) ?? "")
                case 5: event = .trigger(triggers.randomElement(using: &rng) ?? "", arguments: [:])
                default:
                    var value = rng.bytes(Int.random(in: 0...40, using: &rng))
                    if Bool.random(using: &rng), !value.isEmpty { value[0] = 0x81 }
                    event = .write(characteristic: id, central: central, value: value, withResponse: Bool.random(using: &rng))
                }
                let outcome = engine.handle(event)
                if name == "noke-lock.json", case .write("rx", _, _, _) = event {
                    // Noke never stays silent and always notifies 20 bytes.
                    #expect(!outcome.notifications.isEmpty)
                    #expect(outcome.notifications.allSatisfy { $0.value.count == 20 })
                }
            }
        }
    }
}
