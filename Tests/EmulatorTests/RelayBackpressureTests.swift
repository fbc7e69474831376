import Bluetooth
import DBusTestSupport
import Profile
import Synchronization
import Testing

@testable import BlueZ
@testable import Emulator

/// The relay's phone → device direction is bounded like the other one: a phone's link can outpace the device's, and
/// what it sends unacknowledged (Write Commands, and writes bluetoothd acknowledged itself) must not queue without
/// bound in gattemu or in the device side's bluetoothd.
@Suite struct RelayBackpressureTests {
    /// A device whose link takes every write and answers none until released.
    final class StalledDevice: RelayUpstream {
        let deviceAddress = BluetoothAddress("F0:E0:D0:00:00:0D")!
        let deviceAdapter = "hci1"
        let devicePairing = DevicePairing()
        let received = Mutex<[[UInt8]]>([])
        private let waiting = Mutex<[CheckedContinuation<Void, Never>]>([])
        func read(_ attribute: GattAttributeID, offset: Int) async throws(ATTError) -> [UInt8] { [] }
        func write(_ attribute: GattAttributeID, value: [UInt8], offset: Int, withResponse: Bool) async throws(ATTError) {
            received.withLock { $0.append(value) }
            await withCheckedContinuation { continuation in waiting.withLock { $0.append(continuation) } }
        }
        func setSubscribed(_ characteristic: String, _ subscribed: Bool) async throws(ATTError) {}
        func central(_ central: BluetoothAddress, connected: Bool) async {}
        func release() {
            let all = waiting.withLock { waiting in
                defer { waiting = [] }
                return waiting
            }
            for continuation in all { continuation.resume() }
        }
    }

    static func command(_ value: [UInt8], acknowledged: Bool = false) -> GattWriteRequest {
        GattWriteRequest(
            attribute: GattAttributeID(characteristic: "level"), value: value, offset: 0, kind: .command,
            bluetoothdAnswered: acknowledged, prepareAuthorize: false,
            context: GattRequestContext(central: BluetoothAddress("AA:BB:CC:DD:EE:01"), mtu: ATTMTU(rawValue: 185)))
    }

    @Test func writeCommandsPastTheBoundAreDroppedCountedAndLogged() async throws {
        let log = try EventLog(format: .text)
        let emulator = try Emulator(
            profile: PairingAgentTests.profile(security: nil, flags: #"["write", "write-without-response"]"#),
            options: EmulatorOptions(), log: log)
        let device = StalledDevice()
        await emulator.relay(to: device)
        let bound = RelayState.maximumWritesInFlight
        let sent = bound + 36
        await withTaskGroup(of: Void.self) { group in
            for n in 0..<sent {
                group.addTask { try? await emulator.write(Self.command([UInt8(n)], acknowledged: n % 2 == 0)) }
            }
            let held = try? await eventually {
                let dropped = await emulator.relayState.writesDropped
                return device.received.withLock { $0.count } == bound && dropped == sent - bound
            }
            let dropped = await emulator.relayState.writesDropped
            #expect(held == true, "\(device.received.withLock { $0.count }) sent, \(dropped) dropped")
            // A write request is never dropped: the phone has one at a time, and it waits for its answer.
            group.addTask {
                try? await emulator.write(
                    GattWriteRequest(
                        attribute: GattAttributeID(characteristic: "level"), value: [0xAA], offset: 0, kind: .request,
                        bluetoothdAnswered: false, prepareAuthorize: false,
                        context: GattRequestContext(central: BluetoothAddress("AA:BB:CC:DD:EE:01"), mtu: ATTMTU(rawValue: 185))))
            }
            _ = try? await eventually { device.received.withLock { $0.last } == [0xAA] }
            device.release()
        }
        #expect(device.received.withLock { $0.count } == bound + 1)
        let inFlight = await emulator.relayState.writesInFlight
        #expect(inFlight == 0)
        // Flowing again: the next command goes through, and the count of those dropped is logged once.
        let next = Task { try await emulator.write(Self.command([0xEE])) }
        #expect(try await eventually { device.received.withLock { $0.last } == [0xEE] })
        device.release()
        try await next.value
        let relayed = log.events(since: 0).filter { $0.kind == .relayed }.compactMap(\.detail)
        #expect(relayed.filter { $0.hasPrefix("write command dropped: \(bound) writes are already on their way") }.count == 1, "\(relayed)")
        #expect(relayed.contains("\(sent - bound) write commands dropped while the device's link was busy"), "\(relayed)")
        let droppedNow = await emulator.relayState.writesDropped
        #expect(droppedNow == 0)
    }
}
