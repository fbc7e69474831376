import Bluetooth
import Profile
import Synchronization
import Testing

@testable import BlueZ
@testable import Emulator

/// The relay keeps the phone's order: what it does after subscribing reaches the device after the device is
/// subscribed. Seen in the sandbox: the phone subscribed and wrote; the relay forwarded the write while the device's
/// subscription was still under way, the device indicated its answer to nobody, and the phone never got it.
@Suite struct RelayOrderTests {
    /// A device whose subscription takes until released; it records what reached it, in order.
    final class SlowSubscribe: RelayUpstream {
        let deviceAddress = BluetoothAddress("F0:E0:D0:00:00:0D")!
        let deviceAdapter = "hci1"
        let devicePairing = DevicePairing()
        let operations = Mutex<[String]>([])
        private let calls = HeldCalls()
        func read(_ attribute: GattAttributeID, offset: Int) async throws(ATTError) -> [UInt8] {
            operations.withLock { $0.append("read") }
            return []
        }
        func write(_ attribute: GattAttributeID, value: [UInt8], offset: Int, withResponse: Bool) async throws(ATTError) {
            operations.withLock { $0.append("write") }
        }
        func setSubscribed(_ characteristic: CharacteristicID, _ subscribed: Bool) async throws(ATTError) {
            operations.withLock { $0.append("subscribe begins") }
            await calls.hold()
            operations.withLock { $0.append("subscribed") }
        }
        func central(_ central: BluetoothAddress, connected: Bool) async {}
        func checkLink() async -> String? { nil }
        var held: Int { calls.held }
        func release() { calls.release() }
    }

    @Test(.timeLimit(.minutes(1))) func aWriteAfterASubscriptionWaitsForTheDevicesSubscription() async throws {
        let device = SlowSubscribe()
        let log = try EventLog(format: .text)
        let emulator = try Emulator(
            profile: PairingAgentTests.profile(security: nil, flags: #"["read", "write", "indicate"]"#), options: EmulatorOptions(),
            log: log)
        await emulator.relay(to: device)
        let context = GattRequestContext(central: RelayBackpressureTests.central, mtu: ATTMTU(rawValue: 185))
        let subscribing = Task {
            await emulator.subscriptionChanged(GattSubscriptionChange(characteristic: "level", kind: .started, context: context))
        }
        while device.held == 0 { await Task.yield() }
        let writing = Task {
            try await emulator.write(
                GattWriteRequest(
                    attribute: GattAttributeID(characteristic: "level"), value: [1], offset: 0, kind: .request,
                    bluetoothdAnswered: false, prepareAuthorize: false, context: context))
        }
        // Give the write every chance to overtake: it must not reach the device while the subscription is under way.
        for _ in 0..<200 { await Task.yield() }
        #expect(device.operations.withLock { $0 } == ["subscribe begins"])
        device.release()
        await subscribing.value
        try await writing.value
        #expect(device.operations.withLock { $0 } == ["subscribe begins", "subscribed", "write"])
    }
}
