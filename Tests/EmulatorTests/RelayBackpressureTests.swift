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
    /// A device behind a slow link, as the device side's bluetoothd makes it look: a Write Command is taken at once
    /// (bluetoothd queues what the link cannot carry yet and answers the call); a request — a write request, or the
    /// link check — is answered only once released (once the commands before it have gone over the link).
    final class SlowLink: RelayUpstream {
        let deviceAddress = BluetoothAddress("F0:E0:D0:00:00:0D")!
        let deviceAdapter = "hci1"
        let devicePairing = DevicePairing()
        /// nil: the device has nothing to check the link with.
        let check: String?
        let received = Mutex<[[UInt8]]>([])
        let checks = Mutex(0)
        private let calls = HeldCalls()
        init(check: String? = "a read") { self.check = check }
        func read(_ attribute: GattAttributeID, offset: Int) async throws(ATTError) -> [UInt8] { [] }
        func write(_ attribute: GattAttributeID, value: [UInt8], offset: Int, withResponse: Bool) async throws(ATTError) {
            received.withLock { $0.append(value) }
            if withResponse { await calls.hold() }
        }
        func setSubscribed(_ characteristic: CharacteristicID, _ subscribed: Bool) async throws(ATTError) {}
        func central(_ central: BluetoothAddress, connected: Bool) async {}
        func checkLink() async -> String? {
            guard let check else { return nil }
            checks.withLock { $0 += 1 }
            await calls.hold()
            return check
        }
        var held: Int { calls.held }
        func release() { calls.release() }
    }

    static let central = BluetoothAddress("AA:BB:CC:DD:EE:01")

    static func write(_ value: [UInt8], _ kind: GattWriteRequest.Kind = .command, acknowledged: Bool = false) -> GattWriteRequest {
        GattWriteRequest(
            attribute: GattAttributeID(characteristic: "level"), value: value, offset: 0, kind: kind,
            bluetoothdAnswered: acknowledged, prepareAuthorize: false,
            context: GattRequestContext(central: central, mtu: ATTMTU(rawValue: 185)))
    }

    static func relay(to device: SlowLink) async throws -> (Emulator, EventLog) {
        let log = try EventLog(format: .text)
        let emulator = try Emulator(
            profile: PairingAgentTests.profile(security: nil, flags: #"["write", "write-without-response"]"#),
            options: EmulatorOptions(), log: log)
        await emulator.relay(to: device)
        return (emulator, log)
    }

    @Test func writeCommandsPastTheBoundAreDroppedUntilALinkCheckShowsThemGone() async throws {
        let device = SlowLink()
        let (emulator, log) = try await Self.relay(to: device)
        let bound = RelayState.maximumCommandsWaiting
        let sent = bound + 36
        // Each command is taken at once, as bluetoothd takes them: without a link check, all would reach its queue.
        for n in 0..<sent { try await emulator.write(Self.write([UInt8(n)], acknowledged: n % 2 == 0)) }
        #expect(device.received.withLock { $0.count } == bound)
        let dropped = await emulator.relayState.writesDropped
        #expect(dropped == sent - bound)
        // One link check, asked once half the bound was sent, and still unanswered.
        #expect(try await eventually { device.held == 1 })
        #expect(device.checks.withLock { $0 } == 1)
        // A write request is never dropped: the phone has one at a time, and it waits for its answer.
        let request = Task { try await emulator.write(Self.write([0xAA], .request)) }
        #expect(try await eventually { device.received.withLock { $0.last } == [0xAA] })
        #expect(try await eventually { device.held == 2 })
        // The link carried the commands: the check and the request are answered, and the commands flow again.
        device.release()
        try await request.value
        let waiting = await emulator.relayState.commandsWaiting
        #expect(waiting == 0)
        try await emulator.write(Self.write([0xEE]))
        #expect(device.received.withLock { $0.last } == [0xEE])
        let relayed = log.events(since: 0).filter { $0.kind == .relayed }.compactMap(\.detail)
        #expect(
            relayed.filter { $0.hasPrefix("write command dropped: \(bound) write commands may still wait for the device's link") }
                .count == 1, "\(relayed)")
        #expect(relayed.contains("\(sent - bound) write commands dropped while the device's link was busy"), "\(relayed)")
        #expect(relayed.contains { $0.hasPrefix("link check: ") && $0.contains("more write commands have left for the device (a read") })
        let droppedNow = await emulator.relayState.writesDropped
        #expect(droppedNow == 0)
    }

    @Test func aLinkCheckAnsweredInTimeDropsNothing() async throws {
        let device = SlowLink()
        let (emulator, _) = try await Self.relay(to: device)
        // A phone as fast as the link: each check is answered before the bound is reached.
        for n in 0..<1_000 {
            try await emulator.write(Self.write([UInt8(truncatingIfNeeded: n)]))
            if await emulator.relayState.commandsWaiting >= RelayState.linkCheckAfter {
                #expect(try await eventually { device.held == 1 })
                device.release()
                #expect(try await eventually { await emulator.relayState.commandsWaiting < RelayState.linkCheckAfter })
            }
        }
        #expect(device.received.withLock { $0.count } == 1_000)
        #expect(device.checks.withLock { $0 } >= 1_000 / RelayState.maximumCommandsWaiting)
        let dropped = await emulator.relayState.writesDropped
        #expect(dropped == 0)
    }

    @Test func aDeviceWithNothingToCheckTheLinkWithIsNotBoundedAndSaysSo() async throws {
        let device = SlowLink(check: nil)
        let (emulator, log) = try await Self.relay(to: device)
        for n in 0..<RelayState.linkCheckAfter { try await emulator.write(Self.write([UInt8(n)])) }
        #expect(try await eventually { await emulator.relayState.linkUncheckable })
        let more = RelayState.maximumCommandsWaiting * 4
        for n in 0..<more { try await emulator.write(Self.write([UInt8(truncatingIfNeeded: n)])) }
        #expect(device.received.withLock { $0.count } == RelayState.linkCheckAfter + more)
        let notes = log.events(since: 0).filter { $0.kind == .note }.compactMap(\.detail)
        #expect(notes.filter { $0.hasPrefix("relay: write commands to the device are not bounded") }.count == 1, "\(notes)")
    }
}
