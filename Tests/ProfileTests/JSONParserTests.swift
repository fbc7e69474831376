import Testing

@testable import Profile

@Suite struct JSONParserTests {
    @Test func recordsLineAndColumnOfValuesAndKeys() throws {
        let text = "{\n  \"a\": [1, true],\n  \"bé\": {\"c\": \"x\"}\n}"
        let root = try JSONParser.parse(text, file: "f.json")
        #expect(root.location == SourceLocation(file: "f.json", line: 1, column: 1))
        guard case .object(let members) = root.value else {
            Issue.record("expected an object")
            return
        }
        #expect(members.map(\.key) == ["a", "bé"])
        #expect(members[0].keyLocation == SourceLocation(file: "f.json", line: 2, column: 3))
        #expect(members[0].value.location.column == 8)
        guard case .array(let items) = members[0].value.value else {
            Issue.record("expected an array")
            return
        }
        #expect(items.map(\.location.column) == [9, 12])
        // Columns count characters, not bytes: "é" is two bytes but one column.
        #expect(members[1].value.location == SourceLocation(file: "f.json", line: 3, column: 9))
        #expect(root["bé"]?["c"]?.stringValue == "x")
    }

    @Test func decodesEscapesAndSurrogatePairs() throws {
        let root = try JSONParser.parse(#"["a\n\"\u00e9\ud83d\ude00\/"]"#, file: "f")
        guard case .array(let items) = root.value else {
            Issue.record("expected an array")
            return
        }
        #expect(items.first?.stringValue == "a\n\"é😀/")
    }

    @Test func keepsHugeNumbersAsText() throws {
        let root = try JSONParser.parse("[1e999, 123456789012345678901234567890, -0, 2.5]", file: "f")
        guard case .array(let items) = root.value else {
            Issue.record("expected an array")
            return
        }
        let numbers = items.compactMap { node -> JSONNumber? in
            if case .number(let n) = node.value { return n }
            return nil
        }
        #expect(numbers.map(\.text) == ["1e999", "123456789012345678901234567890", "-0", "2.5"])
        #expect(numbers.map(\.int) == [nil, nil, 0, nil])
    }

    @Test(arguments: [
        ("", "f:1:1: unexpected end of file, expected a value"),
        ("[1,]", "f:1:4: trailing comma in array"),
        ("{\"a\" 1}", "f:1:6: unexpected character '1', expected ':' after the key \"a\""),
        ("[01]", "f:1:2: leading zeros are not allowed in numbers"),
        ("[tru]", "f:1:2: invalid literal, expected 'true'"),
        ("\"a\nb\"", "f:1:3: control character (0xa) in a string; escape it"),
        ("[\"\\ud800\"]", "f:1:9: unpaired surrogate in \\u escape"),
        ("{} x", "f:1:4: unexpected character 'x' after the end of the document"),
        ("[1 2]", "f:1:4: unexpected character '2', expected ',' or ']'"),
        ("\n\n  {\"a\": }", "f:3:9: unexpected character '}', expected a value"),
    ])
    func reportsSyntaxErrorsWithPositions(text: String, expected: String) {
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(text, file: "f") }
        do {
            _ = try JSONParser.parse(text, file: "f")
        } catch {
            #expect(error.description == expected)
        }
    }

    @Test func rejectsInvalidUTF8() {
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse([0x22, 0xC3, 0x28, 0x22], file: "f") }
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse([0x5B, 0xFF, 0x5D], file: "f") }
    }

    @Test func limitsNestingWithoutOverflowingTheStack() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        do {
            _ = try JSONParser.parse(deep, file: "f")
            Issue.record("deep nesting was accepted")
        } catch {
            #expect(error.message == "nesting is deeper than 128 levels")
            #expect(error.location.column == 129)
        }
        let ok = String(repeating: "[", count: 128) + String(repeating: "]", count: 128)
        #expect(throws: Never.self) { try JSONParser.parse(ok, file: "f") }
    }
}
