import Replica
import Testing

@Suite struct OrderedJSONTests {
    @Test func keepsOrderAndEscapesToASCII() {
        let json: OrderedJSON = .object([("z", .int(1)), ("a", .string("é \"q\" \u{1B}")), ("list", .array([.int(1), .bool(true)]))])
        #expect(json.text() == #"{ "z": 1, "a": "\u00e9 \"q\" \u001b", "list": [1, true] }"#)
        #expect(OrderedJSON.hex([0xAB, 0x01]) == .object([("hex", .string("ab01"))]))
    }
}
