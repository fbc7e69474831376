import Bluetooth
import DBusTestSupport
import Profile
import Synchronization
import Testing

@testable import BlueZ
@testable import Emulator

/// The runtime is a pipeline: the faults are a stage around whatever answers, in both directions, and the runtime
/// around them notes and logs each operation. A responder that is neither the profile nor the relay (as the
/// firmware-update target will be) gets the same faults, the same log and the same link events.
@Suite struct ResponderPipelineTests {
    /// A stand-in answerer: reads are answered with `answer`; everything it is handed is kept.
    final class Recorder: GattResponder, @unchecked Sendable {
        var answer: [UInt8] = [1, 2, 3, 4]
        var writes: [[UInt8]] = []
        var subscriptions: [SubscriptionOperation] = []
        var links: [LinkEvent] = []
        func read(_ operation: ReadOperation, in runtime: isolated Emulator) async throws(ATTError) -> [UInt8] { answer }
        func write(_ operation: WriteOperation, in runtime: isolated Emulator) async throws(ATTError) { writes.append(operation.value) }
        func subscription(_ operation: SubscriptionOperation, in runtime: isolated Emulator) async { subscriptions.append(operation) }
        func link(_ event: LinkEvent, in runtime: isolated Emulator) async { links.append(event) }
    }

    /// A stand-in delivery: keeps what would have gone to bluetoothd.
    final class Outbox: NotificationSender, @unchecked Sendable {
        var sent: [[UInt8]] = []
        func send(_ notification: OutgoingNotification, in runtime: isolated Emulator) async { sent.append(notification.value) }
    }

    static let central = BluetoothAddress("AA:BB:CC:DD:EE:01")!
    static let context = GattRequestContext(central: central, mtu: ATTMTU(rawValue: 185))

    static func emulator(flags: String = #"["read", "write", "notify"]"#) throws -> (Emulator, EventLog) {
        let log = try EventLog(format: .text)
        let emulator = try Emulator(profile: PairingAgentTests.profile(security: nil, flags: flags), options: EmulatorOptions(), log: log)
        return (emulator, log)
    }

    static func read() -> GattReadRequest {
        GattReadRequest(attribute: GattAttributeID(characteristic: "level"), offset: 0, context: context)
    }

    static func write(_ value: [UInt8]) -> GattWriteRequest {
        GattWriteRequest(
            attribute: GattAttributeID(characteristic: "level"), value: value, offset: 0, kind: .request, bluetoothdAnswered: false,
            prepareAuthorize: false, context: context)
    }

    @Test func anyResponderIsAnsweredThroughTheFaults() async throws {
        let (emulator, log) = try Self.emulator()
        let recorder = Recorder()
        await emulator.answer(with: recorder)
        _ = try await emulator.addFault(fault(#"{"on": "read", "characteristic": "level", "corrupt": {"at": 0, "xor": "ff"}}"#))
        _ = try await emulator.addFault(fault(#"{"on": "write", "characteristic": "level", "truncate": 1}"#))
        // The answer is changed on its way out, the written value on its way in.
        #expect(try await emulator.read(Self.read()) == [0xFE, 2, 3, 4])
        try await emulator.write(Self.write([9, 8, 7]))
        #expect(recorder.writes == [[9]])
        let answers = log.events(since: 0).filter { $0.kind == .answer }
        #expect(answers.first?.value == [0xFE, 2, 3, 4], "the log has the answer the central got")
        #expect(log.events(since: 0).filter { $0.kind == .fault }.count == 2)
    }

    @Test func aRefusedWriteNeverReachesTheResponderAndIsAnsweredOnce() async throws {
        let (emulator, log) = try Self.emulator()
        let recorder = Recorder()
        await emulator.answer(with: recorder)
        _ = try await emulator.addFault(fault(#"{"on": "write", "error": "not-authorized"}"#))
        await #expect(throws: ATTError.notAuthorized) { try await emulator.write(Self.write([1])) }
        #expect(recorder.writes.isEmpty)
        #expect(log.events(since: 0).filter { $0.kind == .answer }.compactMap(\.detail) == ["error \(ATTError.notAuthorized)"])
    }

    /// Before the pipeline, a relayed write refused by a fault was logged as answered twice (once by the fault, once
    /// by the relay's own error path); the relay is now one responder behind the same stage.
    @Test func aRelayedWriteRefusedByAFaultIsAnsweredOnce() async throws {
        let (emulator, log) = try Self.emulator()
        let device = RelayBackpressureTests.SlowLink()
        await emulator.relay(to: device)
        _ = try await emulator.addFault(fault(#"{"on": "write", "error": "failed"}"#))
        let command = GattWriteRequest(
            attribute: GattAttributeID(characteristic: "level"), value: [1], offset: 0, kind: .command, bluetoothdAnswered: false,
            prepareAuthorize: false, context: Self.context)
        await #expect(throws: ATTError.failed) { try await emulator.write(command) }
        #expect(device.received.withLock { $0 }.isEmpty)
        #expect(log.events(since: 0).filter { $0.kind == .answer }.count == 1)
    }

    @Test func linkAndSubscriptionEventsReachTheResponder() async throws {
        let (emulator, _) = try Self.emulator()
        let recorder = Recorder()
        await emulator.answer(with: recorder)
        await emulator.centralEvent(.connected(address: Self.central))
        await emulator.subscriptionChanged(GattSubscriptionChange(characteristic: "level", kind: .acquired, context: Self.context))
        await emulator.subscriptionChanged(GattSubscriptionChange(characteristic: "level", kind: .released, context: Self.context))
        await emulator.centralEvent(.disconnected(address: Self.central))
        let who = CentralID(address: Self.central)
        #expect(recorder.links == [.connected(who), .disconnected(who)])
        #expect(recorder.subscriptions.map(\.subscribed) == [true, false])
        #expect(recorder.subscriptions.allSatisfy { $0.central == who && $0.characteristic == "level" })
    }

    @Test func notificationsLeaveThroughTheFaultsToTheDelivery() async throws {
        let (emulator, log) = try Self.emulator()
        let outbox = Outbox()
        await emulator.answer(with: ProfileResponder(), delivery: outbox)
        _ = try await emulator.addFault(fault(#"{"on": "notify", "duplicate": 2}"#))
        await emulator.sendNotification("level", value: [5], target: .allSubscribers, indicate: false)
        #expect(outbox.sent == [[5], [5], [5]])
        _ = try await emulator.addFault(fault(#"{"on": "notify", "drop": true}"#))
        await emulator.sendNotification("level", value: [6], target: .allSubscribers, indicate: false)
        #expect(outbox.sent.count == 3, "a dropped notification does not reach the delivery")
        #expect(log.events(since: 0).contains { $0.detail == "notification dropped" })
    }
}
