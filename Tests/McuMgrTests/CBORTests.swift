import McuMgr
import Testing

/// CBOR as SMP bodies use it: RFC 8949's examples both ways, indefinite lengths read, hostile lengths refused
/// before anything is allocated.
@Suite struct CBORTests {
    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    @Test(arguments: [
        ("00", CBOR.unsigned(0)), ("17", .unsigned(23)), ("1818", .unsigned(24)), ("1903e8", .unsigned(1000)),
        ("1a000f4240", .unsigned(1_000_000)), ("1b000000e8d4a51000", .unsigned(1_000_000_000_000)), ("20", .negative(0)),
        ("3863", .negative(99)), ("40", .bytes([])), ("4401020304", .bytes([1, 2, 3, 4])), ("60", .text("")),
        ("6449455446", .text("IETF")), ("62c3bc", .text("ü")), ("80", .array([])),
        ("83010203", .array([.unsigned(1), .unsigned(2), .unsigned(3)])), ("a0", .map([])),
        ("a26161016162820203", .map(["a": .unsigned(1), "b": .array([.unsigned(2), .unsigned(3)])])), ("f4", .bool(false)),
        ("f5", .bool(true)), ("f6", .null), ("f7", .undefined), ("c11a514b67b0", .tagged(1, .unsigned(1_363_896_240))),
    ])
    func examplesBothWays(_ hex: String, _ value: CBOR) throws {
        #expect(try CBOR(decoding: Self.bytes(hex)) == value)
        #expect(value.encoded == Self.bytes(hex))
    }

    @Test func indefiniteLengthsAndFloatsAreRead() throws {
        #expect(
            try CBOR(decoding: Self.bytes("9f018202039f0405ffff"))
                == .array([.unsigned(1), .array([.unsigned(2), .unsigned(3)]), .array([.unsigned(4), .unsigned(5)])]))
        #expect(try CBOR(decoding: Self.bytes("bf6346756ef563416d7421ff")) == .map(["Fun": .bool(true), "Amt": .negative(1)]))
        #expect(try CBOR(decoding: Self.bytes("5f42010243030405ff")) == .bytes([1, 2, 3, 4, 5]))
        #expect(try CBOR(decoding: Self.bytes("7f657374726561646d696e67ff")) == .text("streaming"))
        #expect(try CBOR(decoding: Self.bytes("f93c00")) == .float(1.0))
        #expect(try CBOR(decoding: Self.bytes("f9c400")) == .float(-4.0))
        #expect(try CBOR(decoding: Self.bytes("fa47c35000")) == .float(100_000.0))
        #expect(try CBOR(decoding: Self.bytes("fb3ff199999999999a")) == .float(1.1))
        #expect(CBOR.float(1.1).encoded == Self.bytes("fb3ff199999999999a"))
    }

    @Test func readingValues() throws {
        let body = try CBOR(decoding: CBOR.map(["off": .unsigned(512), "data": .bytes([1, 2]), "n": .int(-3), "ok": .bool(true)]).encoded)
        #expect(body["off"]?.int == 512)
        #expect(body["data"]?.bytes == [1, 2])
        #expect(body["n"]?.int == -3)
        #expect(body["ok"]?.bool == true)
        #expect(body["missing"] == nil)
        #expect(CBOR.negative(UInt64.max).int == nil)
        #expect(CBOR.unsigned(UInt64.max).int == nil)
    }

    @Test(arguments: [
        ("", "ends inside"), ("18", "ends inside"), ("5a7fffffff", "only 0 are left"), ("9b00000000ffffffff", "items in fewer bytes"),
        ("bb00000000ffffffff", "entries in fewer bytes"), ("62c3", "only 1 are left"), ("62fffe", "not UTF-8"), ("1c", "reserved"),
        ("9f01", "ends before a break"), ("ff", "a break outside"), ("0000", "bytes after"), ("5f6161ff", "not a definite string"),
        ("f0", "simple value"), ("1f", "indefinite length"),
    ])
    func hostileBytesAreRefused(_ hex: String, _ reason: String) {
        #expect { try CBOR(decoding: Self.bytes(hex)) } throws: { "\($0)".contains(reason) }
    }

    @Test func nestingAndItemCountsAreBounded() {
        let deep = [UInt8](repeating: 0x81, count: 40) + [0x00]
        #expect { try CBOR(decoding: deep) } throws: { "\($0)".contains("nested deeper") }
        let many = [0x9F] + [UInt8](repeating: 0x00, count: 5000) + [0xFF]
        #expect { try CBOR(decoding: many) } throws: { "\($0)".contains("more than 4096 items") }
    }
}
