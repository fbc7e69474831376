import BlueZ
import BlueZTestSupport
import DBus
import DBusTestSupport
import Emulator
import Foundation
import Profile
import Testing

/// Notifications longer than a central's ATT MTU − 3: split into pieces for a characteristic with `fragment`,
/// and never truncated silently by BlueZ otherwise (gattemu says so in the log).
@Suite struct NotificationMTUTests {
    static let device: DBusObjectPath = "/org/bluez/hci0/dev_F0_E0_D0_00_00_01"

    @Test func longNotificationsAreSplitOrReported() async throws {
        let profile = try ProfileLoader.load(
            json: #"""
                {"format": 1, "device": {"name": "Chunky"},
                 "services": [{"id": "s", "uuid": "12345678-0000-4000-8000-000000000000", "characteristics": [
                   {"id": "chunked", "uuid": "12345678-0000-4000-8000-000000000001", "flags": ["notify"], "fragment": true},
                   {"id": "whole", "uuid": "12345678-0000-4000-8000-000000000002", "flags": ["notify"]}]}]}
                """#, file: "mtu.json")
        let bus = try PrivateBus()
        let bluetoothd = try await StandInBluetoothd.withAdapter(bus)
        var options = EmulatorOptions()
        options.bus = .address(bus.address)
        let log = try EventLog(format: .text)
        let emulator = try Emulator(profile: profile, options: options, log: log)
        try await emulator.start()
        let application = try #require(bluetoothd.applications.first)
        func path(_ suffix: String) async throws -> DBusObjectPath {
            try await bluetoothd.characteristicPath(application.owner, application.path, uuidSuffix: suffix)
        }
        // The central subscribes at ATT MTU 23 (an Android phone before requestMtu).
        let mtu23 = StandInBluetoothd.options(mtu: 23, device: Self.device)
        let chunked = try await bluetoothd.acquireNotify(application.owner, try await path("000000000001"), options: mtu23).socket
        let whole = try await bluetoothd.acquireNotify(application.owner, try await path("000000000002"), options: mtu23).socket
        let value = (0..<50).map { UInt8($0) }
        try await emulator.notify(characteristic: "chunked", value: value, indicate: false)
        try await emulator.notify(characteristic: "whole", value: value, indicate: false)
        try await emulator.notify(characteristic: "whole", value: Array(value.prefix(20)), indicate: false)

        // Pieces of MTU − 5: bluetoothd sends a BlueZ central's notifications as Multiple Handle Value Notifications,
        // whose values carry at most MTU − 5 bytes, and cuts a longer one short (found by smpmgr; docs/firmware.md).
        #expect(Self.pending(chunked.rawValue) == [Array(value[0..<18]), Array(value[18..<36]), Array(value[36..<50])])
        #expect(Self.pending(whole.rawValue) == [value, Array(value.prefix(20))], "gattemu hands BlueZ the whole value")
        let notes = log.events(since: 0).filter { $0.kind == .note }.compactMap(\.detail)
        #expect(notes.contains { $0.contains("50 bytes sent in 3 pieces of at most 18 (ATT MTU 23 − 5") }, "\(notes)")
        #expect(notes.filter { $0.contains("BlueZ sends only the first 20 bytes") }.count == 1, "\(notes)")
        #expect(
            notes.filter { $0.contains("notification of 20 bytes is longer than ATT MTU 23 − 5") && $0.contains("the first 18 bytes") }
                .count == 1, "a value BlueZ cuts for a central that takes several notifications per PDU is said too: \(notes)")
        // Each operation of the central carries the MTU of its link (JSON `mtu`).
        let subscriptions = log.events(since: 0).filter { $0.kind == .subscribed }
        #expect(subscriptions.count == 2 && subscriptions.allSatisfy { $0.mtu == 23 && $0.json.contains("\"mtu\":23") }, "\(subscriptions)")
        await emulator.stop()
        _ = bus
    }

    static func pending(_ socket: Int32) -> [[UInt8]] {
        var packets: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 600)
        for _ in 0..<100 {
            let count = recv(socket, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count > 0 {
                packets.append(Array(buffer.prefix(count)))
                continue
            }
            if packets.count >= 2 { break }
            usleep(20_000)
        }
        return packets
    }
}
