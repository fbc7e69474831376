import Replica
import Testing

@Suite struct OrderedJSONTests {
    @Test func keepsOrderAndEscapesToASCII() {
        let json: OrderedJSON = .object([("z", .int(1)), ("a", .string("é \"q\" \u{1B}"))])
        #expect(json.text() == #"{ "z": 1, "a": "\u00e9 \"q\" \u001b" }"#)
        let nested: OrderedJSON = .object([("list", .array([.int(1), .bool(true)])), ("more", .object([("a", .int(1)), ("b", .int(2)), ("c", .int(3))]))])
        #expect(nested.text() == "{\n  \"list\": [1, true],\n  \"more\": { \"a\": 1, \"b\": 2, \"c\": 3 }\n}")
        #expect(OrderedJSON.hex([0xAB, 0x01]) == .object([("hex", .string("ab01"))]))
    }
}
