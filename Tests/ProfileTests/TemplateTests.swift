import Bluetooth
import Testing

@testable import Profile

@Suite struct TemplateTests {
    func render(_ source: String, _ context: TemplateContext = TemplateContext()) throws -> [UInt8] {
        var context = context
        return try Template.parse(source, kind: .bytes).render(in: &context)
    }

    @Test func hexLiteralsAndRequestSlices() throws {
        let context = TemplateContext(request: [0x10, 0x11, 0x12, 0x13, 0x14, 0x15])
        #expect(try render("51 60 {request[2]} 00", context) == [0x51, 0x60, 0x12, 0x00])
        #expect(try render("5160 0xFF", context) == [0x51, 0x60, 0xFF])
        #expect(try render("{request[1..3]}", context) == [0x11, 0x12, 0x13])
        #expect(try render("{request[4..]}", context) == [0x14, 0x15])
        // Out of range: the missing part renders as nothing.
        #expect(try render("AA {request[9]} {request[4..19]} BB", context) == [0xAA, 0x14, 0x15, 0xBB])
        #expect(try render("{len(request)} {len(request[2..])}", context) == [6, 4])
    }

    @Test func integersWithWidthAndEndianness() throws {
        #expect(try render("{u16le(2820)} {u16be(2820)}") == [0x04, 0x0B, 0x0B, 0x04])
        #expect(try render("{u24be(0x010203)} {u32le(1)}") == [1, 2, 3, 1, 0, 0, 0])
        #expect(try render("{u64be(0 - 1)}") == [UInt8](repeating: 0xFF, count: 8))
        #expect(try render("{u8(1 + 2 * 3)} {(1 + 2) * 3}") == [7, 9])
        #expect(try render("{u8(300)}") == [0x2C])  // low byte
    }

    @Test func checksums() throws {
        let digits = TemplateContext(request: Array("123456789".utf8))
        #expect(try render("{u16be(crc16(request))}", digits) == [0x29, 0xB1])  // CRC-16/CCITT-FALSE check value
        #expect(try render("{sum8(hex(\"FF 02\"))} {xor8(hex(\"F0 0F\"), hex(\"01\"))}") == [0x01, 0xFE])
    }

    @Test func textVariablesStateAndAddresses() throws {
        let context = TemplateContext(
            variables: ["code": .string("3E"), "volts": .number(2820), "key": .bytes([1, 2]), "on": .bool(true)],
            state: ["code": .string("2P")], adapterAddress: BluetoothAddress("d0:1f:a6:44:b3:6f")!,
            centralAddress: BluetoothAddress("11:22:33:44:55:66")!)
        #expect(try render("{\"hi\"} {key} {on} {volts}", context) == [0x68, 0x69, 1, 2, 1, 0x04])
        #expect(
            try render("{addressBytes} {reverse(centralBytes)}", context) == [
                0xD0, 0x1F, 0xA6, 0x44, 0xB3, 0x6F, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
            ])
        var textContext = context
        let name = try Template.parse("NOKE{code}_{address} {volts} {key} {{x}} {central}", kind: .text)
        // State shadows a variable of the same name.
        #expect(name.renderText(in: &textContext) == "NOKE2P_D01FA644B36F 2820 0102 {x} 112233445566")
        #expect(try render("{utf8(volts)}", context) == Array("2820".utf8))
    }

    @Test func padFillCountersAndRandomness() throws {
        #expect(try render("51 62 {pad(5)}") == [0x51, 0x62, 0, 0, 0])
        #expect(try render("01 02 03 {pad(2)}") == [1, 2, 3])  // never truncates
        #expect(try render("01 {pad(3, 0xFF)} 02") == [1, 0xFF, 0xFF, 2])
        #expect(try render("{fill(0xAB, 3)}") == [0xAB, 0xAB, 0xAB])
        var context = TemplateContext(counters: ["seq": 255])
        let template = try Template.parse("{counter(seq)} {counter(seq)} {u16le(counter(other))}", kind: .bytes)
        #expect(template.render(in: &context) == [0xFF, 0x00, 0x00, 0x00])
        #expect(context.counters == ["seq": 257, "other": 1])

        var first = TemplateContext(generator: SeededGenerator(seed: 7))
        var second = TemplateContext(generator: SeededGenerator(seed: 7))
        let random = try Template.parse("{random(16)}", kind: .bytes)
        let a = random.render(in: &first)
        #expect(a.count == 16)
        #expect(random.render(in: &second) == a)
        #expect(random.render(in: &first) != a)
    }

    @Test func valueAndArgumentLookups() throws {
        let context = TemplateContext(characteristicValues: ["tx": [9, 8]], arguments: ["who": "me"])
        #expect(try render("{value(tx)} {arg(\"who\")} {value(nope)}", context) == [9, 8, 0x6D, 0x65])
    }

    @Test(arguments: [
        ("51 6", 3, "odd number of hex digits"),
        ("51 zz", 3, "'z' is not a hex digit"),
        ("{request[3..1]}", 12, "slice end 1 is before its start 3"),
        ("{u8(1}", 5, "expected ',' or ')' in the arguments of u8()"),
        ("}", 0, "unmatched '}'"),
        ("{\"abc}", 1, "string literal is not closed"),
        ("{99999999999999999999}", 1, "number 99999999999999999999 is too large"),
        ("{+}", 1, "unexpected '+', expected a number, a string, a name or a function call"),
    ])
    func syntaxErrorsHaveOffsets(source: String, offset: Int, message: String) {
        do {
            _ = try Template.parse(source, kind: .bytes)
            Issue.record("\(source) parsed")
        } catch {
            #expect(error.offset == offset)
            #expect(error.message == message)
        }
    }

    @Test func nestingIsLimited() {
        let deep = "{" + String(repeating: "u8(", count: 1000) + "1" + String(repeating: ")", count: 1000) + "}"
        #expect(throws: TemplateSyntaxError.self) { try Template.parse(deep, kind: .bytes) }
        let parens = "{" + String(repeating: "(", count: 1000) + "1" + String(repeating: ")", count: 1000) + "}"
        #expect(throws: TemplateSyntaxError.self) { try Template.parse(parens, kind: .bytes) }
    }

    @Test func checkerFlagsNamesFunctionsAndContexts() throws {
        let checker = TemplateChecker(variables: ["volts"], state: ["lock"], characteristics: ["tx"], usage: .rule)
        let issues = checker.check(try Template.parse("{vols} {value(tz)} {counter(1)} {hex(\"0g\")} {lock}", kind: .bytes))
        #expect(
            issues.map(\.message) == [
                "unknown name \"vols\"", "unknown characteristic \"tz\"", "counter() takes a counter name, e.g. counter(sequence)",
                "\"0g\" is not valid hex",
            ])
        #expect(issues.first?.hint == "did you mean \"volts\"?")
        let advertisement = TemplateChecker(variables: [], state: [], characteristics: [], usage: .advertisement)
        #expect(
            advertisement.check(try Template.parse("{counter(a)} {address}", kind: .text)).map(\.message) == [
                "counter() cannot be used here"
            ])
    }

    @Test func hexTextOfContiguousAndOtherByteSequences() {
        #expect([0x51, 0x60, 0x0A].hexString() == "51600A")
        #expect([0x51, 0x60, 0x0A].hexString(separator: " ", uppercase: false) == "51 60 0a")
        #expect([UInt8]().hexString(separator: ":") == "")
        #expect([0xFF].hexString(separator: ":") == "FF")
        // Not contiguous: the byte-by-byte path.
        #expect([UInt8]([1, 0xAB, 2]).reversed().hexString(separator: "--") == "02--AB--01")
        var line = Array("x ".utf8)
        [0xDE, 0xAD].appendHex(to: &line, uppercase: false)
        #expect(String(decoding: line, as: UTF8.self) == "x dead")
    }
}
