import DBus
import DBusTestSupport
import Foundation
import Testing

/// Every D-Bus type, sent through a real dbus-daemon to an echo object and back.
@Suite struct MarshallingTests {
    static let values: [DBusValue] = [
        .byte(0xA5), .boolean(true), .boolean(false), .int16(-12345), .uint16(54321),
        .int32(-2_000_000_000), .uint32(4_000_000_000), .int64(-9_000_000_000_000), .uint64(18_000_000_000_000_000_000),
        .double(3.25), .string("héllo ✓"), .string(""), .objectPath("/org/bluez/hci0/dev_AA"), .signature("a{sv}"),
        .bytes([0, 1, 2, 255]), .bytes([]), .bytes(Array(repeating: 0x42, count: 512)),
        .strings(["a", "b"]), .array(element: .int32, []),
        .array(element: "(ys)", [.structure([.byte(1), .string("x")])]),
        .stringVariantDictionary(["mtu": .uint16(517), "device": .objectPath("/org/bluez/hci0/dev_11"), "link": .string("LE")]),
        .dictionary(key: .uint16, value: .bytes, [DBusDictionaryEntry(key: .uint16(0xFFFF), value: .bytes([1, 2]))]),
        .structure([.int32(1), .variant(.variant(.string("nested"))), .strings([])]),
        .variant(.array(element: "a{sv}", [.stringVariantDictionary([:])])),
        // Element signatures read off the first element, from libdbus when it is a container or absent.
        .dictionary(key: .uint16, value: .bytes, []),
        .dictionary(key: .string, value: "(ii)", [DBusDictionaryEntry(key: .string("p"), value: .structure([.int32(1), .int32(2)]))]),
        .dictionary(
            key: .string, value: "a{sv}", [DBusDictionaryEntry(key: .string("o"), value: .stringVariantDictionary(["k": .boolean(true)]))]),
        .dictionary(key: .objectPath, value: .string, [DBusDictionaryEntry(key: .objectPath("/a"), value: .string("b"))]),
        .array(element: "a{sv}", [.stringVariantDictionary(["x": .byte(1)]), .stringVariantDictionary([:])]),
        .array(element: .variant, [.variant(.uint32(7)), .variant(.strings(["s"]))]),
        .array(element: "as", [.strings(["a"]), .strings([])]),
        .array(element: .unixFD, []),
    ]

    @Test func everyTypeRoundTripsThroughTheBus() async throws {
        let bus = try PrivateBus()
        let server = try await bus.connect()
        let client = try await bus.connect()
        try await server.export([echoInterface], at: "/echo")
        for value in Self.values {
            let reply = try await client.call(
                destination: server.uniqueName, path: "/echo", interface: "test.Echo", member: "Echo",
                arguments: [.variant(value)])
            #expect(reply == [.variant(value)], "round trip of \(value.signature)")
        }
        await client.close()
        await server.close()
    }

    @Test func multipleArgumentsKeepTheirOrder() async throws {
        let bus = try PrivateBus()
        let server = try await bus.connect()
        let client = try await bus.connect()
        let echoAll = DBusInterface(
            name: "test.Echo",
            methods: [
                DBusMethod("Swap", input: "sy", output: "ys") { call in
                    let arguments = try call.arguments
                    return [arguments[1], arguments[0]]
                }
            ])
        try await server.export([echoAll], at: "/echo")
        let reply = try await client.call(
            destination: server.uniqueName, path: "/echo", interface: "test.Echo", member: "Swap",
            arguments: [.string("first"), .byte(2)])
        #expect(reply == [.byte(2), .string("first")])
    }

    /// The reader a GATT write uses: typed values out of `ay` and `a{sv}`, looking through variants, nil (and
    /// on to the next argument) for another type.
    @Test func argumentReaderReadsTypedValuesInOrder() async throws {
        let bus = try PrivateBus()
        let server = try await bus.connect()
        let client = try await bus.connect()
        let reader = DBusInterface(
            name: "test.Reader",
            methods: [
                DBusMethod("Read", input: "sya{sv}ay", output: "as") { call in
                    let seen = call.readArguments { reader -> [String] in
                        var seen = ["\(reader.bytes() as Any)", "\(reader.integer() as Any)"]
                        reader.forEachEntry { key, value in
                            switch key {
                            case "device": seen.append("device \(value.objectPath() as Any)")
                            case "mtu", "offset", "huge": seen.append("\(key) \(value.integer() as Any)")
                            case "flag": seen.append("flag \(value.boolean() as Any)")
                            case "nested", "path": seen.append("\(key) \(value.string() as Any)")
                            default: seen.append("\(key) mistyped \(value.integer() as Any)")
                            }
                        }
                        seen.append("\(reader.bytes() ?? [])")
                        seen.append("end \(reader.bytes() as Any) \((try? reader.value()) as Any)")
                        return seen
                    }
                    return [.strings(seen)]
                }
            ])
        try await server.export([reader], at: "/reader")
        let options: [(String, DBusValue)] = [
            ("device", .objectPath("/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF")), ("mtu", .uint16(517)), ("offset", .uint32(5)),
            ("huge", .uint64(.max)), ("flag", .boolean(true)), ("nested", .variant(.string("x"))),
            ("path", .objectPath("/p")), ("link", .string("LE")),
        ]
        let reply = try await client.call(
            destination: server.uniqueName, path: "/reader", interface: "test.Reader", member: "Read",
            arguments: [
                .string("not bytes"), .byte(7),
                .dictionary(
                    key: .string, value: .variant,
                    options.map {
                        DBusDictionaryEntry(key: .string($0.0), value: .variant($0.1))
                    }), .bytes([1, 2, 3]),
            ])
        #expect(
            reply.first?.arrayElements?.compactMap(\.string) == [
                "nil", "Optional(7)", "device Optional(/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF)", "mtu Optional(517)",
                "offset Optional(5)", "huge nil", "flag Optional(true)", "nested Optional(\"x\")", "path Optional(\"/p\")",
                "link mistyped nil", "[1, 2, 3]", "end nil nil",
            ])
    }

    @Test func fileDescriptorsArePassedAndOwned() async throws {
        let bus = try PrivateBus()
        let server = try await bus.connect()
        let client = try await bus.connect()
        try await server.export([echoInterface], at: "/echo")
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let readEnd = DBusFileDescriptor(owning: ends[0])
        let writeEnd = DBusFileDescriptor(owning: ends[1])
        let reply = try await client.call(
            destination: server.uniqueName, path: "/echo", interface: "test.Echo", member: "Echo",
            arguments: [.variant(.unixFD(writeEnd))])
        let received = try #require(reply.first?.unixFD)
        #expect(received.rawValue != writeEnd.rawValue, "the bus hands out a new descriptor")
        var message: [UInt8] = Array("through the bus".utf8)
        #expect(write(received.rawValue, &message, message.count) == message.count)
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = read(readEnd.rawValue, &buffer, 64)
        #expect(Array(buffer.prefix(max(count, 0))) == message)
    }

    @Test func valuesThatCannotBeSentAreRefusedLocally() async throws {
        let bus = try PrivateBus()
        let client = try await bus.connect()
        let bad: [DBusValue] = [
            .string("nul\0inside"), .objectPath("not a path"), .signature("a{"),
            .array(element: .string, [.int32(1)]), .structure([]),
        ]
        for value in bad {
            await #expect(throws: DBusError.self, "\(value)") {
                _ = try await client.call(
                    destination: "org.example", path: "/", interface: "test.Echo", member: "Echo", arguments: [value])
            }
        }
    }

    private var echoInterface: DBusInterface {
        DBusInterface(
            name: "test.Echo",
            methods: [
                DBusMethod("Echo", input: "v", output: "v") { call in try call.arguments }
            ])
    }
}
