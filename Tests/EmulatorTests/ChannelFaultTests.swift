import Bluetooth
import Profile
import Testing

@testable import Emulator

/// Faults on L2CAP channels: `on` channel (a request), sdu (received), send (sent), narrowed by `channel`.
@Suite struct ChannelFaultTests {
    func operation(_ kind: FaultOperationKind, _ channel: String) -> FaultOperation {
        FaultOperation(kind, centrals: [BluetoothAddress("AA:BB:CC:DD:EE:01")!], channel: channel)
    }

    @Test func aTransferIsCutAtTheNthSDUOfItsChannelOnly() throws {
        var engine = FaultEngine()
        try engine.add(fault(#"{"on": "send", "channel": "data", "nth": 3, "closeChannel": true}"#))
        #expect(engine.plan(for: operation(.send, "log")).isEmpty, "another channel's SDUs are not counted")
        let closed = (1...5).map { _ in engine.plan(for: operation(.send, "data")).closeChannel }
        #expect(closed == [false, false, true, false, false])
        #expect(engine.plan(for: operation(.sdu, "data")).isEmpty, "an SDU received is another operation")
    }

    @Test func refuseRefusesAChannelOnlyWhenItSaysSo() throws {
        #expect(try fault(#"{"refuse": true}"#).on == .pair, "without on, refuse is still about pairing")
        var engine = FaultEngine()
        try engine.add(fault(#"{"on": "channel", "refuse": true, "count": 1}"#))
        #expect(engine.plan(for: operation(.channel, "data")).refuseChannel)
        #expect(engine.plan(for: operation(.channel, "data")).isEmpty)
    }

    /// Requests must wait for the runtime (deferred setup) only while a fault can still refuse or delay one: not for a
    /// used-up fault, one that only disconnects, or one on another channel.
    @Test func onlyAFaultThatCanStillRefuseOrDelayHoldsRequestsBack() throws {
        var engine = FaultEngine()
        #expect(!engine.mayRefuseOrDelayRequests(forChannel: "data"))
        try engine.add(fault(#"{"on": "channel", "channel": "ctl", "delay": "1s"}"#))
        try engine.add(fault(#"{"on": "channel", "disconnect": true}"#))
        #expect(!engine.mayRefuseOrDelayRequests(forChannel: "data"), "another channel's delay, a disconnect")
        #expect(engine.mayRefuseOrDelayRequests(forChannel: "ctl"))
        try engine.add(fault(#"{"on": "channel", "refuse": true, "count": 1}"#))
        #expect(engine.mayRefuseOrDelayRequests(forChannel: "data"), "a refusal scoped to no channel")
        #expect(engine.plan(for: operation(.channel, "data")).refuseChannel)
        #expect(!engine.mayRefuseOrDelayRequests(forChannel: "data"), "used up")
    }

    /// A result the kernel gives (no listener, a security level) is held while the fault is installed: it never fires
    /// on a request gattemu sees (such a request came on a link the kernel let through), needs no deferral, and of two
    /// held at once the one the kernel checks first wins. `insufficient-authorization` is `true` by name.
    @Test func aKernelsRefusalIsHeldNotFired() throws {
        var engine = FaultEngine()
        try engine.add(fault(#"{"id": "enc", "on": "channel", "refuse": "insufficient-encryption"}"#))
        #expect(engine.heldRefusal(forChannel: "data")?.refusal == .insufficientEncryption)
        #expect(!engine.mayRefuseOrDelayRequests(forChannel: "data"), "the kernel answers: nothing to defer")
        #expect(engine.plan(for: operation(.channel, "data")).isEmpty, "a request on an encrypted link is let through")
        try engine.add(fault(#"{"id": "gone", "on": "channel", "channel": "data", "refuse": "psm-not-supported"}"#))
        #expect(engine.heldRefusal(forChannel: "data").map { [$0.refusal.rawValue] + $0.faults } == ["psm-not-supported", "gone"])
        #expect(engine.heldRefusal(forChannel: "ctl")?.refusal == .insufficientEncryption, "the other is scoped to data")
        engine.noteHeld(["gone"])
        engine.noteHeld(["gone"])
        #expect(engine.faults.map(\.fired) == [0, 1], "counted once, when the listener first refuses for it")
        #expect(engine.remove(id: "gone") && engine.remove(id: "enc") && engine.heldRefusal(forChannel: "data") == nil)

        try engine.add(fault(#"{"on": "channel", "refuse": "insufficient-authorization", "nth": 2}"#))
        #expect(engine.heldRefusal(forChannel: "data") == nil && engine.mayRefuseOrDelayRequests(forChannel: "data"))
        #expect([1, 2].map { _ in engine.plan(for: operation(.channel, "data")).refuseChannel } == [false, true])
    }

    @Test func aHeldRefusalTakesNoRequestFilterAndNoPairing() throws {
        for key in [#""nth": 2"#, #""count": 1"#, #""central": "AA:BB:CC:DD:EE:01""#, #""probability": 0.5"#] {
            let error = try #require(throws: FaultSpecError.self) {
                try fault(#"{"on": "channel", "refuse": "psm-not-supported", \#(key)}"#)
            }
            #expect(error.message.contains("the kernel's answer to every request"), "\(error)")
        }
        let pairing = try #require(throws: FaultSpecError.self) { try fault(#"{"refuse": "insufficient-encryption"}"#) }
        #expect(pairing.path == "refuse" && pairing.message.contains("a pairing is refused with true"), "\(pairing)")
        let unknown = try #require(throws: FaultSpecError.self) { try fault(#"{"on": "channel", "refuse": "no-resources"}"#) }
        #expect(unknown.message.contains("\"psm-not-supported\""), "the names are listed: \(unknown)")
        #expect(try fault(#"{"on": "channel", "refuse": "insufficient-authorization", "count": 1}"#).scope.count == 1)
    }

    /// A channel that asks for authentication is refused by the kernel with 0x0005 whatever the fault: asking it for
    /// insufficient-encryption is a conflict, named.
    @Test func insufficientEncryptionIsRefusedWhereTheChannelAsksForMore() throws {
        let profile = try ProfileLoader.load(
            json: #"""
                {"format": 1, "services": [], "security": {"io": "DisplayOnly"},
                 "channels": [{"id": "data", "psm": "any"}, {"id": "key", "psm": "any", "security": "authenticated"}]}
                """#, file: "c.json")
        let scoped = try fault(#"{"on": "channel", "channel": "data", "refuse": "insufficient-encryption"}"#)
        #expect(profile.problem(with: scoped) == nil)
        let all = try #require(profile.problem(with: try fault(#"{"on": "channel", "refuse": "insufficient-encryption"}"#)))
        #expect(all.kind == .conflict && all.message.contains("channel \"key\" asks for authenticated links"), "\(all)")
        #expect(profile.problem(with: try fault(#"{"on": "channel", "refuse": "insufficient-authentication"}"#)) == nil)
    }

    @Test func anSDUsBytesChangeUpToItsChannelsMTU() throws {
        var engine = FaultEngine()
        try engine.add(fault(#"{"on": "sdu", "corrupt": {"at": 300, "hex": "ee"}}"#))
        let plan = engine.plan(for: operation(.sdu, "data"))
        let sdu = [UInt8](repeating: 1, count: 1000)
        let changed = plan.mutated(sdu, limit: 2048)
        #expect(changed.cut == 0 && changed.bytes.count == 1000 && changed.bytes[300] == 0xEE, "not cut at the ATT value limit")
        #expect(plan.mutated(sdu).bytes.count == ATTMTU.maximumValueLength, "a characteristic's value still is")
    }

    @Test func theDecoderKeepsChannelScopesToChannelOperations() {
        #expect(throws: FaultSpecError.self) { try fault(#"{"on": "write", "channel": "data", "drop": true}"#) }
        #expect(throws: FaultSpecError.self) { try fault(#"{"on": "channel", "truncate": 3}"#) }
        #expect(throws: FaultSpecError.self) { try fault(#"{"on": "notify", "closeChannel": true}"#) }
        #expect(throws: FaultSpecError.self) { try fault(#"{"on": "send", "channel": "not a name", "drop": true}"#) }
    }

    @Test func aProfileWithoutChannelsSaysSo() throws {
        let profile = try ProfileLoader.load(
            json: #"{"format": 1, "services": [], "channels": [{"id": "data", "psm": "any"}]}"#, file: "c.json")
        #expect(
            profile.problem(with: try fault(#"{"on": "send", "channel": "dta", "drop": true}"#))?.message.contains("did you mean \"data\"")
                == true)
        #expect(profile.problem(with: try fault(#"{"on": "send", "channel": "data", "drop": true}"#)) == nil)
        let none = try ProfileLoader.load(json: #"{"format": 1, "services": []}"#, file: "n.json")
        #expect(none.problem(with: try fault(#"{"on": "sdu", "drop": true}"#))?.message.contains("no \"channels\"") == true)
    }
}
