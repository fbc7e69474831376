import Bluetooth
import DBusTestSupport
import Profile
import Synchronization
import Testing

@testable import BlueZ
@testable import Emulator

/// The device's notifications reach the emulator in the order they came, in batches taken until none is left.
@Suite struct RelayNotificationsTests {
    @Test func batchesAreHandedOverInOrderUntilNoneIsLeft() async throws {
        let log = try EventLog(format: .text)
        let emulator = try Emulator(
            profile: PairingAgentTests.profile(security: nil, flags: #"["notify"]"#), options: EmulatorOptions(), log: log)
        let batches = Mutex<[[RelayedNotification]]>(
            (0..<5).map { batch in
                (0..<(batch * 7 + 1)).map {
                    RelayedNotification(characteristic: "level", value: [UInt8(batch), UInt8($0)], indicate: false)
                }
            })
        let taken = Mutex(0)
        emulator.relayNotifications {
            taken.withLock { $0 += 1 }
            return batches.withLock { $0.isEmpty ? [] : $0.removeFirst() }
        }
        let relayed = { log.events(since: 0).filter { $0.kind == .relayed }.compactMap(\.value) }
        try await eventually { relayed().count == 75 && taken.withLock { $0 } == 6 }
        let expected = (0..<5).flatMap { batch in (0..<(batch * 7 + 1)).map { [UInt8(batch), UInt8($0)] } }
        #expect(relayed() == expected)
        #expect(taken.withLock { $0 } == 6, "five batches, then one empty answer that ends the hand-over")
    }
}

/// A characteristic that offers both notifications and indications: bluetoothd subscribes the device for
/// notifications whatever the phone enabled, and D-Bus cannot ask for indications; the relay says so in the log at
/// the moment it subscribes the device (issue 43's finding), and says nothing for one that offers one of the two.
@Suite struct RelaySubscriptionCaveatTests {
    func subscribed(flags: String) async throws -> [String] {
        let log = try EventLog(format: .text)
        let emulator = try Emulator(profile: PairingAgentTests.profile(security: nil, flags: flags), options: EmulatorOptions(), log: log)
        await emulator.relay(to: RelayBackpressureTests.SlowLink())
        await emulator.subscriptionChanged(
            GattSubscriptionChange(
                characteristic: "level", kind: .started, context: GattRequestContext(central: RelayBackpressureTests.central)))
        return log.events(since: 0).filter { $0.kind == .relayed }.compactMap(\.detail)
    }

    @Test func bothOfferedIsLoggedAsNotificationsOnly() async throws {
        let details = try await subscribed(flags: #"["notify", "indicate"]"#)
        #expect(
            details.contains { $0.hasPrefix("device subscribed for notifications only") && $0.contains("whatever the phone enabled") },
            "\(details)")
    }

    @Test func oneOfferedIsPlain() async throws {
        #expect(try await subscribed(flags: #"["notify"]"#).contains("device subscribed"))
        #expect(try await subscribed(flags: #"["indicate"]"#).contains("device subscribed"))
    }
}
