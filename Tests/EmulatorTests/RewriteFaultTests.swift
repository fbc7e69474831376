import Profile
import Testing

@testable import Emulator

/// `rewrite` (match bytes → replace) and the byte faults on writes: the mutation, the plans, the decoder's bounds.
@Suite struct RewriteFaultTests {
    static func rewrite(_ match: [UInt8], _ replace: [UInt8], all: Bool = true) -> ValueMutation {
        .rewrite(match: match, replace: replace, all: all)
    }

    @Test func replacesEveryOccurrenceLeftToRightAndNothingElse() {
        #expect(Self.rewrite([0x51, 0x60], [0xAA]).apply(to: [0x51, 0x60, 0x00, 0x51, 0x60, 0x51]) == [0xAA, 0x00, 0xAA, 0x51])
        #expect(Self.rewrite([0x51, 0x60], [0xAA], all: false).apply(to: [0x51, 0x60, 0x51, 0x60]) == [0xAA, 0x51, 0x60])
        // Occurrences do not overlap, and a replacement is never searched again.
        #expect(Self.rewrite([1, 1], [2]).apply(to: [1, 1, 1]) == [2, 1])
        #expect(Self.rewrite([1], [1, 1]).apply(to: [1, 0, 1]) == [1, 1, 0, 1, 1])
        // An empty replacement deletes; no occurrence, or a match longer than the value, changes nothing.
        #expect(Self.rewrite([0xFF], []).apply(to: [0xFF, 1, 0xFF]) == [1])
        #expect(Self.rewrite([9], [8]).apply(to: [1, 2, 3]) == [1, 2, 3])
        #expect(Self.rewrite([1, 2, 3, 4], [8]).apply(to: [1, 2, 3]) == [1, 2, 3])
        #expect(Self.rewrite([1], [8]).apply(to: []) == [])
    }

    @Test func aResultPastTheATTLimitIsCutAndTheCutCounted() {
        let value = [UInt8](repeating: 7, count: 300)
        let (bytes, cut) = Self.rewrite([7], [7, 7]).applied(to: value)
        #expect(bytes == [UInt8](repeating: 7, count: 512) && cut == 88)
        #expect(Self.rewrite([7], [7, 7]).applied(to: [7, 7]) == ([7, 7, 7, 7], 0))
        // Every byte fault is held to the limit: corrupt's replacement appended past the end too.
        #expect(ValueMutation.replace(at: 512, bytes: [1, 2]).applied(to: [0]).cut == 2)
        var plan = FaultPlan()
        plan.mutations = [Self.rewrite([7], [7, 7, 7]), .truncate(600), Self.rewrite([7], [7, 7])]
        let mutated = plan.mutated(value)
        #expect(mutated.bytes.count == 512 && mutated.cut == (900 - 512) + (1024 - 512))
        #expect(plan.mutate(value) == mutated.bytes)
    }

    @Test func writesGetTheByteFaultsInTheirPlans() throws {
        var engine = FaultEngine()
        try engine.add(fault(#"{"on": "write", "characteristic": "config", "rewrite": {"match": "0102", "replace": {"utf8": "A"}}}"#))
        try engine.add(fault(#"{"on": "write", "characteristic": "config", "corrupt": {"at": 0, "xor": "ff"}}"#))
        try engine.add(fault(#"{"on": "write", "characteristic": "config", "truncate": 2}"#))
        let plan = engine.plan(for: write())
        #expect(plan.fired.map(\.id) == ["f1", "f2", "f3"])
        #expect(plan.fired[0].mutation == .rewrite(match: [1, 2], replace: [0x41], all: true))
        // In the order the faults were added: 01 02 03 → 41 03 → BE 03 → BE 03.
        #expect(plan.mutate([1, 2, 3]) == [0xBE, 0x03])
        #expect(engine.plan(for: write("other")).mutations.isEmpty)
        #expect(plan.fired[0].detail == "f1 rewrite every 01 02 → 41 (write #1)")
    }

    @Test func decodesEveryValueFormAndAll() throws {
        func action(_ json: String) throws -> FaultAction { try fault(json).action }
        #expect(
            try action(#"{"on": "notify", "rewrite": {"match": "51 60", "replace": ""}}"#)
                == .rewrite(match: [0x51, 0x60], replace: [], all: true))
        #expect(
            try action(#"{"on": "read", "rewrite": {"match": {"hex": "0x51"}, "replace": {"base64": "UWA="}, "all": false}}"#)
                == .rewrite(match: [0x51], replace: [0x51, 0x60], all: false))
        #expect(
            try action(#"{"on": "indicate", "rewrite": {"match": {"utf8": "ok"}, "replace": {"utf8": "ng"}, "all": true}}"#)
                == .rewrite(match: Array("ok".utf8), replace: Array("ng".utf8), all: true))
        #expect(try action(#"{"on": "write", "truncate": 0}"#) == .truncate(0))
        #expect(try fault(#"{"on": "write", "corrupt": {"flipBits": 1}}"#).on == .write)
    }

    @Test func refusesBadRewritesWithAReason() throws {
        func refusal(_ json: String) -> FaultSpecError? {
            do {
                _ = try fault(json)
                return nil
            } catch let error as FaultSpecError {
                return error
            } catch {
                return nil
            }
        }
        for bad in [
            #"{"on": "notify", "rewrite": {"match": "", "replace": "01"}}"#,
            #"{"on": "notify", "rewrite": {"match": {"hex": "0x"}, "replace": "01"}}"#,
            #"{"on": "notify", "rewrite": {"match": {"utf8": ""}, "replace": "01"}}"#,
            #"{"on": "notify", "rewrite": {"match": {"base64": " "}, "replace": "01"}}"#,
            #"{"on": "notify", "rewrite": {"match": "zz", "replace": "01"}}"#,
            #"{"on": "notify", "rewrite": {"match": "01"}}"#,
            #"{"on": "notify", "rewrite": {"match": "01", "replace": "02", "all": 1}}"#,
            #"{"on": "notify", "rewrite": {"match": "01", "replace": "02", "every": true}}"#,
            #"{"on": "notify", "rewrite": {"match": {"hex": "01", "utf8": "a"}, "replace": "02"}}"#,
            #"{"on": "notify", "rewrite": {"match": {"ascii": "a"}, "replace": "02"}}"#,
            #"{"on": "notify", "rewrite": {"match": 1, "replace": "02"}}"#,
            #"{"on": "connect", "rewrite": {"match": "01", "replace": "02"}}"#,
            #"{"rewrite": {"match": "01", "replace": "02"}}"#,
        ] {
            let error = refusal(bad)
            #expect(error?.kind == .invalid, "\(bad)")
        }
        // Text past the form's limit is malformed; well-formed text of more than 512 bytes is a conflict (409).
        let longText = String(repeating: "a", count: 513)
        #expect(refusal(#"{"on": "notify", "rewrite": {"match": {"utf8": "\#(longText)"}, "replace": ""}}"#)?.kind == .invalid)
        let wide = String(repeating: "é", count: 300)
        let tooMany = refusal(#"{"on": "notify", "rewrite": {"match": "01", "replace": {"utf8": "\#(wide)"}}}"#)
        #expect(tooMany?.kind == .conflict)
        #expect(tooMany?.description == "rewrite: replace: 600 bytes, over the 512-byte value limit", "\(String(describing: tooMany))")
        let hex = String(repeating: "ab ", count: 513)
        #expect(refusal(#"{"on": "notify", "rewrite": {"match": "\#(hex)", "replace": ""}}"#)?.kind == .conflict)
    }
}
