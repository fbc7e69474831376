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
        .dictionary(key: .string, value: "a{sv}", [DBusDictionaryEntry(key: .string("o"), value: .stringVariantDictionary(["k": .boolean(true)]))]),
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
        let echoAll = DBusInterface(name: "test.Echo", methods: [
            DBusMethod("Swap", input: "sy", output: "ys") { call in [call.arguments[1], call.arguments[0]] },
        ])
        try await server.export([echoAll], at: "/echo")
        let reply = try await client.call(
            destination: server.uniqueName, path: "/echo", interface: "test.Echo", member: "Swap",
            arguments: [.string("first"), .byte(2)])
        #expect(reply == [.byte(2), .string("first")])
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
        DBusInterface(name: "test.Echo", methods: [
            DBusMethod("Echo", input: "v", output: "v") { call in call.arguments },
        ])
    }
}
