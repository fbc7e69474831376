import Bluetooth
import DBusTestSupport
import Profile
import Testing

@testable import BlueZ
@testable import Emulator

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
