import ControlBodies
import ControlContract
import FaultCatalog
import Foundation
import Profile
import Testing

/// The fault catalog (module FaultCatalog) against what reads it: the profile's fault decoder, the contract's
/// action names, schema and defaults, and the OpenAPI document's `x-fault-catalog`.
@Suite struct FaultCatalogTests {
    static func parse(_ text: String) throws -> JSONNode { try JSONParser.parse(text, file: "spec") }

    /// `node` as JSON text again.
    static func text(_ node: JSONNode) -> String {
        func quoted(_ text: String) -> String { String(decoding: (try? JSONEncoder().encode(text)) ?? Data(), as: UTF8.self) }
        switch node.value {
        case .null: return "null"
        case .bool(let flag): return flag ? "true" : "false"
        case .number(let number): return number.text
        case .string(let string): return quoted(string)
        case .array(let items): return "[" + items.map(text).joined(separator: ", ") + "]"
        case .object(let members): return "{" + members.map { quoted($0.key) + ": " + text($0.value) }.joined(separator: ", ") + "}"
        }
    }

    @Test func theContractHasOneActionPerKind() {
        #expect(FaultActionBody.Name.allCases.map(\.rawValue) == FaultCatalog.names)
        #expect(FaultSpecDecoder.actionKeys == FaultCatalog.names)
        #expect(Set(FaultCatalog.names).count == FaultCatalog.kinds.count, "names are unique")
    }

    /// Each kind's example decodes as that kind, matches the contract's schema and survives the trip through
    /// ``FaultRequest`` (the dashboard's presets, `gattemu ctl`).
    @Test(arguments: FaultCatalog.names)
    func exampleDecodesAndMatchesTheSchema(_ name: String) throws {
        let kind = try #require(FaultCatalog.kind(named: name))
        let spec = try FaultSpecDecoder.spec(Self.parse(kind.example))
        #expect(spec.action.name == name)
        #expect(kind.operations.contains(spec.on))
        let request = try ContractTests.encode(FaultRequest(spec))
        #expect(try FaultSpecDecoder.spec(request) == spec)
        // A client reading it back (`gattemu ctl status` decodes the presets) gets the same fault.
        let decoded = try JSONDecoder().decode(FaultRequest.self, from: Data(kind.example.utf8))
        #expect(try FaultSpecDecoder.spec(ContractTests.encode(decoded)) == spec)
        var validator = SchemaValidator()
        #expect(validator.problems(try Self.parse(kind.example), FaultRequest.schema) == [], "\(kind.example)")
        #expect(validator.problems(request, FaultRequest.schema) == [], "\(request)")
        #expect(!kind.summary.isEmpty && kind.summary.hasSuffix("."), "one sentence")
    }

    /// A kind applies to exactly the operations the catalog lists, in the decoder and in the schema alike;
    /// without `on` it watches its implicit operation, or `on` is required.
    @Test(arguments: FaultCatalog.names)
    func operationsAreTheCatalogs(_ name: String) throws {
        let kind = try #require(FaultCatalog.kind(named: name))
        let example = try Self.parse(kind.example)
        let value = try #require(example[name])
        let valueText = Self.text(value)
        for operation in FaultOperation.allCases {
            let text = #"{"on": "\#(operation.rawValue)", "\#(name)": \#(valueText)}"#
            let decoded = Result { () throws(FaultSpecError) in try FaultSpecDecoder.spec(try! Self.parse(text)) }
            var validator = SchemaValidator()
            let schemaProblems = validator.problems(try Self.parse(text), FaultRequest.schema)
            let allowed = kind.operations.contains(operation)
            #expect(((try? decoded.get()) != nil) == allowed, "decoder: \(text)")
            #expect(schemaProblems.isEmpty == allowed, "schema: \(text) \(schemaProblems)")
        }
        let bare = #"{"\#(name)": \#(valueText)}"#
        #expect((try? FaultSpecDecoder.spec(Self.parse(bare)))?.on == kind.implicitOperation, "\(bare)")
        if let suggested = kind.suggestedOperation { #expect(kind.operations.contains(suggested)) }
    }

    /// `gattemu ctl fault add` and the dashboard choose the catalog's suggested operation, else the spec's own.
    @Test func commandLineDefaultsComeFromTheCatalog() {
        #expect(FaultRequest.defaultTrigger(for: .error(.name("failed")), characteristic: false, nth: false) == .write)
        #expect(FaultRequest.defaultTrigger(for: .truncate(1), characteristic: false, nth: false) == .notify)
        #expect(FaultRequest.defaultTrigger(for: .refuse(nil), characteristic: false, nth: false) == .pair)
        #expect(FaultRequest.defaultTrigger(for: .silence(.text("1s")), characteristic: false, nth: false) == nil)
        #expect(FaultRequest.defaultTrigger(for: .disconnect, characteristic: true, nth: false) == .write)
        #expect(FaultRequest.defaultTrigger(for: .forgetBonds, characteristic: false, nth: true) == nil)
    }

    /// A byte parameter is written in the profile's hex grammar: `"0x01"` as in a profile's `{"hex": "0x01"}`.
    @Test func byteParametersTakeTheProfilesHexGrammar() throws {
        for text in [#"{"on": "notify", "corrupt": {"hex": "0x01"}}"#, #"{"on": "read", "corrupt": {"at": 2, "xor": "0X80 01"}}"#] {
            #expect(throws: Never.self) { try FaultSpecDecoder.spec(Self.parse(text)) }
            var validator = SchemaValidator()
            #expect(validator.problems(try Self.parse(text), FaultRequest.schema) == [], "\(text)")
        }
        let spec = try FaultSpecDecoder.spec(Self.parse(#"{"on": "notify", "corrupt": {"hex": "0x01 ff"}}"#))
        #expect(spec.action == .corrupt(.replace(at: 0, bytes: [0x01, 0xFF])))
        let long = String(repeating: "ff", count: FaultCatalog.maximumHexCharacters / 2 + 1)
        #expect(throws: FaultSpecError.self) { try FaultSpecDecoder.spec(Self.parse(#"{"on": "notify", "corrupt": {"hex": "\#(long)"}}"#)) }
        for bad in ["0x", "", "0x0x01", "f"] {
            #expect(throws: FaultSpecError.self) {
                try FaultSpecDecoder.spec(Self.parse(#"{"on": "notify", "corrupt": {"xor": "\#(bad)"}}"#))
            }
        }
    }

    /// `rewrite`'s match and replace take the one value grammar: hex text, or `{"hex"|"utf8"|"base64": …}`; the decoder and
    /// the schema agree on every form, except the byte count (over 512 bytes of hex with separators or of UTF-8), which a
    /// schema cannot count and the decoder refuses as a conflict.
    @Test func rewriteTakesTheOneValueGrammar() throws {
        let cases: [(match: String, replace: String, valid: Bool)] = [
            (#""51 60""#, #""""#, true), (#"{"hex": "0x51"}"#, #"{"base64": "UWA="}"#, true), (#"{"utf8": "ok"}"#, #"{"utf8": ""}"#, true),
            (#""""#, #""01""#, false), (#"{"hex": ""}"#, #""01""#, false), (#"{"utf8": ""}"#, #""01""#, false),
            (#"{"base64": " "}"#, #""01""#, false), (#"{"base64": "U"}"#, #""01""#, false), (#""0x0x01""#, #""01""#, false),
            (#"{"hex": "01", "utf8": "a"}"#, #""01""#, false), (#"1"#, #""01""#, false), (#""01""#, #"{"base64": "="}"#, false),
        ]
        for (match, replace, valid) in cases {
            let text = #"{"on": "notify", "rewrite": {"match": \#(match), "replace": \#(replace)}}"#
            var validator = SchemaValidator()
            #expect(((try? FaultSpecDecoder.spec(Self.parse(text))) != nil) == valid, "decoder: \(text)")
            #expect(validator.problems(try Self.parse(text), FaultRequest.schema).isEmpty == valid, "schema: \(text)")
        }
        let wide = #"{"on": "notify", "rewrite": {"match": {"utf8": "\#(String(repeating: "é", count: 257))"}, "replace": ""}}"#
        var validator = SchemaValidator()
        #expect(validator.problems(try Self.parse(wide), FaultRequest.schema).isEmpty)
        let error = #expect(throws: FaultSpecError.self) { try FaultSpecDecoder.spec(Self.parse(wide)) }
        #expect(error?.kind == .conflict && error?.description == "rewrite: match: 514 bytes, over the 512-byte value limit")
    }

    /// The OpenAPI document carries the catalog for the dashboard's form and the docs' check.
    @Test func theDocumentCarriesTheCatalog() throws {
        let document = try Self.parse(ControlContract.documentText)
        guard case .array(let kinds) = try #require(document["x-fault-catalog"]).value else {
            Issue.record("x-fault-catalog is not an array")
            return
        }
        #expect(kinds.compactMap { $0["name"]?.stringValue } == FaultCatalog.names)
        for (entry, kind) in zip(kinds, FaultCatalog.kinds) {
            #expect(entry["example"]?.stringValue == kind.example)
            #expect(entry["implicitOn"]?.stringValue == kind.implicitOperation?.rawValue)
        }
    }
}
