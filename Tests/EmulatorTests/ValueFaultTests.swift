import BlueZ
import BlueZTestSupport
import DBus
import DBusTestSupport
import Emulator
import Foundation
import Profile
import Testing

/// Byte faults on both directions of a write, through the stand-in bluetoothd on a private bus: a `rewrite` on
/// notifications changes exactly the matched bytes the central receives; a `rewrite` or `corrupt` on a write
/// changes the value the profile's rules match; the event log has the central's value and the one the engine got.
@Suite struct ValueFaultTests {
    static let device: DBusObjectPath = "/org/bluez/hci0/dev_F0_E0_D0_00_00_02"

    /// `rx`'s rule answers only `02 02`; anything else is echoed after `ee`.
    static let profile = #"""
        {"format": 1, "device": {"name": "Rewrite"},
         "services": [{"id": "s", "uuid": "12345678-0000-4000-8000-000000000000", "characteristics": [
           {"id": "rx", "uuid": "12345678-0000-4000-8000-000000000001", "flags": ["write"]},
           {"id": "tx", "uuid": "12345678-0000-4000-8000-000000000002", "flags": ["notify"]}]}],
         "rules": [
           {"on": {"write": "rx", "equals": "02 02"}, "do": {"notify": "tx", "value": "aa 51 60 bb 51 60 cc"}},
           {"on": {"write": "rx"}, "otherwise": true, "do": {"notify": "tx", "value": "ee {request}"}}]}
        """#

    static func spec(_ json: String) throws -> FaultSpec { try FaultSpecDecoder.spec(JSONParser.parse(json, file: "fault")) }

    /// The next `count` packets on a notification socket (waiting at most 30 s for them: a loaded machine).
    static func packets(_ socket: Int32, count: Int) -> [[UInt8]] {
        var packets: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        let deadline = Date().addingTimeInterval(30)
        while packets.count < count, Date() < deadline {
            let received = recv(socket, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if received > 0 { packets.append(Array(buffer.prefix(received))) } else { usleep(10_000) }
        }
        return packets
    }

    @Test(.timeLimit(.minutes(5))) func rewritesAndCorruptionsChangeTheBytesOnBothDirections() async throws {
        let bus = try PrivateBus()
        let bluetoothd = try await StandInBluetoothd.withAdapter(bus)
        var options = EmulatorOptions()
        options.bus = .address(bus.address)
        let log = try EventLog(format: .json)
        let emulator = try Emulator(profile: try ProfileLoader.load(json: Self.profile, file: "rewrite.json"), options: options, log: log)
        try await emulator.start()
        let application = try #require(bluetoothd.applications.first)
        let rx = try await bluetoothd.characteristicPath(application.owner, application.path, uuidSuffix: "000000000001")
        let txPath = try await bluetoothd.characteristicPath(application.owner, application.path, uuidSuffix: "000000000002")
        let tx = try await bluetoothd.acquireNotify(application.owner, txPath, options: StandInBluetoothd.options(device: Self.device))
            .socket
        func write(_ value: [UInt8]) async throws {
            try await bluetoothd.writeValue(application.owner, rx, value, options: StandInBluetoothd.options(device: Self.device))
        }

        _ = try await emulator.addFault(
            Self.spec(#"{"on": "notify", "characteristic": "tx", "rewrite": {"match": "51 60", "replace": "99"}}"#))
        _ = try await emulator.addFault(
            Self.spec(#"{"on": "write", "characteristic": "rx", "count": 1, "rewrite": {"match": "01", "replace": "02"}}"#))
        try await write([0x01, 0x02])  // the rule sees 02 02
        #expect(Self.packets(tx.rawValue, count: 1) == [[0xAA, 0x99, 0xBB, 0x99, 0xCC]])
        try await write([0x01, 0x02])  // the write fault is spent: the rule sees the central's bytes
        #expect(Self.packets(tx.rawValue, count: 1) == [[0xEE, 0x01, 0x02]])
        _ = try await emulator.addFault(Self.spec(#"{"on": "write", "characteristic": "rx", "nth": 1, "corrupt": {"at": 0, "hex": "02"}}"#))
        try await write([0x01, 0x02])
        #expect(Self.packets(tx.rawValue, count: 1) == [[0xAA, 0x99, 0xBB, 0x99, 0xCC]])
        // Only the matched bytes change: a lone 51 and a lone 60 around the match stay.
        try await emulator.notify(characteristic: "tx", value: [0x51, 0x51, 0x60, 0x60, 0x00], indicate: false)
        #expect(Self.packets(tx.rawValue, count: 1) == [[0x51, 0x99, 0x60, 0x00]])

        let events = log.events(since: 0)
        #expect(events.filter { $0.kind == .write }.map(\.value) == [[0x01, 0x02], [0x01, 0x02], [0x01, 0x02]], "the central's bytes")
        let changed = events.filter { $0.kind == .note && $0.detail?.hasPrefix("written value changed by faults (2 → 2 bytes)") == true }
        #expect(changed.map(\.value) == [[0x02, 0x02], [0x02, 0x02]], "the bytes the engine got")
        let fired = events.filter { $0.kind == .fault }.compactMap(\.detail)
        #expect(
            fired.contains("f2 rewrite every 01 → 02 (write #1)") && fired.contains("f3 corrupt: bytes at 0 := 02 (write #1)"), "\(fired)")
        #expect(fired.filter { $0.hasPrefix("f1 rewrite every 51 60 → 99 (notify #") }.count == 4, "\(fired)")

        // A rewrite that grows a value past 512 bytes: cut to 512, and the log says so.
        _ = try await emulator.addFault(
            Self.spec(#"{"on": "notify", "characteristic": "tx", "rewrite": {"match": "07", "replace": "07 07"}}"#))
        try await emulator.notify(characteristic: "tx", value: [UInt8](repeating: 7, count: 300), indicate: false)
        #expect(Self.packets(tx.rawValue, count: 1) == [[UInt8](repeating: 7, count: 512)])
        #expect(
            log.events(since: 0).contains {
                $0.kind == .note && $0.detail == "faults made a value of 600 bytes: cut to 512, the ATT value limit"
            })
        await emulator.stop()
        _ = bus
    }
}
