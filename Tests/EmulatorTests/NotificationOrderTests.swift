import BlueZ
import BlueZTestSupport
import DBus
import DBusTestSupport
import Foundation
import Profile
import Testing

@testable import Emulator

/// A notification on another characteristic waits until bluetoothd has read the socket of the one before it: what
/// bluetoothd read is in its ATT queue, which keeps order. When bluetoothd does not read in time, the notification
/// goes anyway, and the log says the central may get them out of order (it said nothing before).
@Suite struct NotificationOrderTests {
    static let device: DBusObjectPath = "/org/bluez/hci0/dev_F0_E0_D0_00_00_01"
    static let profile = #"""
        {"format": 1, "device": {"name": "Order"},
         "services": [{"id": "s", "uuid": "12345678-0000-4000-8000-000000000000", "characteristics": [
           {"id": "a", "uuid": "12345678-0000-4000-8000-0000000000a0", "flags": ["notify"]},
           {"id": "b", "uuid": "12345678-0000-4000-8000-0000000000b0", "flags": ["notify"]}]}]}
        """#

    /// An emulator whose delivery waits `orderWait` for bluetoothd, started, with both characteristics' sockets.
    static func started(orderWait: Duration) async throws -> (
        Emulator, EventLog, a: DBusFileDescriptor, b: DBusFileDescriptor, PrivateBus, StandInBluetoothd
    ) {
        let bus = try PrivateBus()
        let bluetoothd = try await StandInBluetoothd.withAdapter(bus)
        var options = EmulatorOptions()
        options.bus = .address(bus.address)
        let log = try EventLog(format: .text)
        let emulator = try Emulator(profile: try ProfileLoader.load(json: profile, file: "order.json"), options: options, log: log)
        await emulator.answer(with: ProfileResponder(), delivery: NotificationDelivery(orderWait: orderWait))
        try await emulator.start()
        let application = try #require(bluetoothd.applications.first)
        let options23 = StandInBluetoothd.options(mtu: 23, device: Self.device)
        func socket(_ suffix: String) async throws -> DBusFileDescriptor {
            let path = try await bluetoothd.characteristicPath(application.owner, application.path, uuidSuffix: suffix)
            return try await bluetoothd.acquireNotify(application.owner, path, options: options23).socket
        }
        return (emulator, log, try await socket("0000000000a0"), try await socket("0000000000b0"), bus, bluetoothd)
    }

    /// What bluetoothd would read from `socket` now (nil: nothing waiting).
    static func read(_ socket: DBusFileDescriptor) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = recv(socket.rawValue, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        return count > 0 ? Array(buffer.prefix(count)) : nil
    }

    /// What `socket` gets, once it gets something.
    static func next(_ socket: DBusFileDescriptor) async throws -> [UInt8]? {
        var got: [UInt8]?
        _ = try await eventually {
            got = read(socket)
            return got != nil
        }
        return got
    }

    @Test func bWaitsUntilBluetoothdHasReadA() async throws {
        let (emulator, log, a, b, bus, _) = try await Self.started(orderWait: .seconds(60))
        try await emulator.notify(characteristic: "a", value: [0xA1], indicate: false)
        let second = Task { try await emulator.notify(characteristic: "b", value: [0xB1], indicate: false) }
        // bluetoothd has not read a's socket: b's notification waits (the emulator keeps answering meanwhile).
        _ = await emulator.status()
        try await Task.sleep(for: .milliseconds(300))
        #expect(Self.read(b) == nil, "b went before bluetoothd read a")
        #expect(try await Self.next(a) == [0xA1])
        try await second.value
        #expect(try await Self.next(b) == [0xB1])
        #expect(!log.events(since: 0).contains { $0.detail?.contains("out of order") == true })
        await emulator.stop()
        _ = bus
    }

    @Test func whenBluetoothdDoesNotReadInTimeTheLogSaysSo() async throws {
        let (emulator, log, a, b, bus, _) = try await Self.started(orderWait: .milliseconds(20))
        try await emulator.notify(characteristic: "a", value: [0xA1], indicate: false)
        try await emulator.notify(characteristic: "b", value: [0xB1], indicate: false)
        #expect(try await Self.next(b) == [0xB1], "given up after the wait: b went")
        #expect(try await Self.next(a) == [0xA1])
        let notes = log.events(since: 0).compactMap(\.detail).filter { $0.contains("may get them out of order") }
        #expect(notes.count == 1 && notes[0].contains("of a's notification socket were still unread"), "\(notes)")
        await emulator.stop()
        _ = bus
    }
}
