import BlueZ
import Bluetooth
import DBus
import Testing

/// bluetoothd's `a{sv}` request options become one typed value where they enter; hostile options are refused
/// with the error the call gets, or taken as not given — never a crash.
@Suite struct GattRequestOptionsTests {
    static let adapter: DBusObjectPath = "/org/bluez/hci0"
    static let device: DBusValue = .objectPath("/org/bluez/hci0/dev_F0_E0_D0_00_00_01")

    /// `ReadValue(a{sv})` with `options`, marshalled as bluetoothd sends it and read back.
    static func read(_ options: [String: DBusValue]) throws -> Result<GattRequestOptions, ATTError> {
        let message = try DBusMarshalling.marshalledMethodCall(member: "ReadValue", arguments: [.stringVariantDictionary(options)])
        return try DBusMarshalling.readArguments(ofMarshalledMessage: message) { GattRequestOptions.read(&$0, adapter: adapter) }
    }

    /// `WriteValue(ay, a{sv})`.
    static func write(_ value: [UInt8], _ options: [String: DBusValue]) throws -> Result<GattRequestOptions, ATTError> {
        let message = try DBusMarshalling.marshalledMethodCall(
            member: "WriteValue", arguments: [.bytes(value), .stringVariantDictionary(options)])
        return try DBusMarshalling.readArguments(ofMarshalledMessage: message) {
            GattRequestOptions.write(&$0, adapter: adapter).map(\.options)
        }
    }

    @Test func everyOptionIsTypedOnce() throws {
        let options = try Self.write(
            [1, 2],
            [
                "device": Self.device, "link": .string("LE"), "mtu": .uint16(247), "offset": .uint16(12), "type": .string("reliable"),
                "prepare-authorize": .boolean(true),
            ]
        ).get()
        #expect(options.device == "/org/bluez/hci0/dev_F0_E0_D0_00_00_01")
        #expect(options.central == BluetoothAddress("F0:E0:D0:00:00:01"))
        #expect(options.link == .le)
        #expect(options.mtu == ATTMTU(rawValue: 247))
        #expect(options.offset == 12)
        #expect(options.writeType == .reliable)
        #expect(options.prepareAuthorize)
        #expect(try Self.read(["link": .string("BR/EDR"), "type": .string("command")]).get().link == .bredr)
        #expect(try Self.write([], ["type": .string("command")]).get().writeType == .command)
    }

    @Test func wrongVariantTypesAreNotGiven() throws {
        let options = try Self.read([
            "device": .string("/org/bluez/hci0/dev_F0_E0_D0_00_00_01"), "link": .uint32(1), "mtu": .string("247"),
            "type": .int32(1), "prepare-authorize": .string("true"),
        ]).get()
        #expect(options == GattRequestOptions())
        // An offset that is not a number cannot be taken as 0: the call is refused.
        #expect(try Self.read(["offset": .string("12")]) == .failure(.invalidOffset))
        #expect(try Self.read(["offset": .boolean(true)]) == .failure(.invalidOffset))
    }

    @Test func aMissingOrForeignDeviceNamesNoCentral() throws {
        #expect(try Self.read(["mtu": .uint16(185)]).get().central == nil)
        for path: DBusObjectPath in [
            "/org/bluez/hci1/dev_F0_E0_D0_00_00_01", "/org/bluez/hci0/sub/dev_F0_E0_D0_00_00_01", "/org/bluez/hci0/dev_F0_E0_D0_00_00",
            "/org/bluez/hci0/dev_F0_E0_D0_00_00_0G", "/org/bluez/hci0/dev_F0_E0_D0_00_00_01_02", "/org/bluez/hci0",
        ] {
            let options = try Self.read(["device": .objectPath(path)]).get()
            #expect(options.central == nil, "\(path)")
            #expect(options.device == nil, "\(path)")
        }
    }

    @Test func offsetsBeyondTheLongestValueAreRefused() throws {
        #expect(try Self.read(["device": Self.device, "offset": .uint16(512)]).get().offset == 512)
        for offset: DBusValue in [.uint16(513), .uint32(70_000), .int64(-1), .int64(.min), .uint64(.max)] {
            #expect(try Self.read(["device": Self.device, "offset": offset]) == .failure(.invalidOffset), "\(offset)")
            #expect(try Self.write([1], ["device": Self.device, "offset": offset]) == .failure(.invalidOffset), "\(offset)")
        }
        #expect(try Self.write([1], ["offset": .uint16(512)]) == .failure(.invalidValueLength))
        #expect(try Self.write(Array(repeating: 0, count: 513), [:]) == .failure(.invalidValueLength))
    }

    @Test func mtusALinkCannotHaveAreNotGiven() throws {
        for mtu: DBusValue in [.uint16(0), .uint16(22), .uint16(518), .uint16(65535), .int64(-1), .uint64(.max)] {
            #expect(try Self.read(["mtu": mtu]).get().mtu == nil, "\(mtu)")
        }
        #expect(try Self.read(["mtu": .uint16(23)]).get().mtu == .minimum)
        #expect(try Self.read(["mtu": .uint16(517)]).get().mtu == .maximum)
    }

    @Test func unknownLinksAndWriteTypesAreNotGiven() throws {
        let options = try Self.read(["link": .string("le"), "type": .string("signed")]).get()
        #expect(options.link == nil)
        #expect(options.writeType == nil)
    }
}
