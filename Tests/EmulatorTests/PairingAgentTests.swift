import BlueZ
import BlueZTestSupport
import Bluetooth
import DBus
import DBusTestSupport
import Foundation
import Profile
import Testing

@testable import Emulator

/// gattemu's pairing agent against a stand-in bluetoothd on a private bus: registration as the default agent
/// with the profile's IO capability, answers from the profile and from the control API, and who may ask.
@Suite struct PairingAgentTests {
    static let device: DBusValue = .objectPath("/org/bluez/hci0/dev_F0_E0_D0_00_00_01")

    static func profile(security: String?, flags: String = #"["read"]"#) throws -> DeviceProfile {
        let section = security.map { #", "security": \#($0)"# } ?? ""
        return try ProfileLoader.load(
            json: #"""
                {"format": 1, "device": {"name": "Lock"}\#(section),
                 "services": [{"id": "s", "uuid": "180f", "characteristics": [
                   {"id": "level", "uuid": "2a19", "flags": \#(flags), "value": {"hex": "64"}}]}]}
                """#, file: "pairing.json")
    }

    static func started(_ profile: DeviceProfile) async throws -> (PrivateBus, StandInBluetoothd, Emulator, EventLog) {
        let bus = try PrivateBus()
        let bluetoothd = try await StandInBluetoothd.withAdapter(bus)
        var options = EmulatorOptions()
        options.bus = .address(bus.address)
        options.seed = 1
        let log = try EventLog(format: .text)
        let emulator = try Emulator(profile: profile, options: options, log: log)
        try await emulator.start()
        return (bus, bluetoothd, emulator, log)
    }

    /// `secureConnections` other than `on` is set on the controller through the kernel; where that cannot be done
    /// (here: no kernel Bluetooth at all, elsewhere: not root) gattemu does not start, and says why, rather than
    /// run a device that pairs differently from its profile. Nothing stays registered.
    @Test func aSecureConnectionsModeTheKernelCannotSetStopsTheStart() async throws {
        let bus = try PrivateBus()
        let bluetoothd = try await StandInBluetoothd.withAdapter(bus)
        var options = EmulatorOptions()
        options.bus = .address(bus.address)
        let emulator = try Emulator(
            profile: Self.profile(security: #"{"secureConnections": "off"}"#), options: options, log: try EventLog(format: .text))
        do {
            try await emulator.start()
            Issue.record("started although the kernel was not asked")
        } catch {
            #expect("\(error)".contains(#"security.secureConnections "off" on hci0"#), "\(error)")
        }
        #expect(bluetoothd.agents.isEmpty, "the agent registered before went again")
        await emulator.stop()
        #expect(bluetoothd.applications.isEmpty && bluetoothd.advertisements.isEmpty)
    }

    /// Asks the agent in the background, as bluetoothd does while a central pairs; the collector gets
    /// "accepted" or the D-Bus error's name.
    static func ask(_ bluetoothd: StandInBluetoothd, _ member: String, _ arguments: [DBusValue]) -> AsyncCollector<String> {
        let answered = AsyncCollector<String>()
        Task {
            do {
                _ = try await bluetoothd.askAgent(member, arguments)
                answered.append("accepted")
            } catch {
                answered.append((error as? DBusError)?.name ?? "\(error)")
            }
        }
        return answered
    }

    /// The pairing status once a prompt waits (or once ``eventually(within:_:)`` gives up).
    static func prompted(_ emulator: Emulator) async throws -> PairingSnapshot {
        try await eventually { await emulator.pairingStatus().prompt != nil }
        return await emulator.pairingStatus()
    }

    @Test func aProfileThatPairsRegistersTheDefaultAgentWithItsCapabilityAndUnregistersOnStop() async throws {
        let (bus, bluetoothd, emulator, _) = try await Self.started(Self.profile(security: #"{"io": "KeyboardDisplay"}"#))
        #expect(bluetoothd.defaultAgent?.capability == "KeyboardDisplay")
        #expect(bluetoothd.defaultAgent?.owner != nil && bluetoothd.agents.count == 1)
        await emulator.stop()
        #expect(bluetoothd.agents.isEmpty, "the agent is unregistered on stop")
        _ = bus
    }

    @Test func encryptedCharacteristicsGetAJustWorksAgentAndPlainProfilesNone() async throws {
        let (bus, bluetoothd, emulator, _) = try await Self.started(Self.profile(security: nil, flags: #"["read", "encrypt-read"]"#))
        #expect(bluetoothd.defaultAgent?.capability == "NoInputNoOutput")
        _ = try await bluetoothd.askAgent("RequestAuthorization", [Self.device])  // accepted: no error
        await emulator.stop()
        let (bus2, plain, other, _) = try await Self.started(Self.profile(security: nil))
        #expect(plain.agents.isEmpty, "a profile that never needs pairing leaves the desktop's agent alone")
        #expect(await other.pairingStatus() == PairingSnapshot(agent: false))
        await other.stop()
        _ = (bus, bus2)
    }

    /// bluetoothd asks its one default agent about every adapter: a central pairing on another adapter (another
    /// program's, another gattemu's) gets no answer from this profile's rules, however freely they accept.
    @Test func aCentralOnAnotherAdapterIsRefused() async throws {
        let (bus, bluetoothd, emulator, log) = try await Self.started(
            Self.profile(security: #"{"io": "KeyboardOnly", "passkey": "012345"}"#))
        for path in ["/org/bluez/hci1/dev_F0_E0_D0_00_00_01", "/org/bluez/hci0/service0/dev_F0_E0_D0_00_00_01"] {
            do {
                let reply = try await bluetoothd.askAgent("RequestPasskey", [.objectPath(DBusObjectPath(path))])
                Issue.record("\(path): answered \(reply)")
            } catch {
                #expect((error as? DBusError)?.name == "org.bluez.Error.Rejected", "\(path): \(error)")
            }
        }
        #expect(try await bluetoothd.askAgent("RequestPasskey", [Self.device]) == [.uint32(12345)], "its own adapter's central")
        #expect(
            log.events(since: 0).contains {
                $0.kind == .pairing && $0.detail?.contains("on hci1: refused (not gattemu's adapter hci0)") == true
            }, "\(log.events(since: 0).compactMap(\.detail))")
        await emulator.stop()
        _ = bus
    }

    @Test func theProfilesPasskeyIsTypedAndARefusingProfileRefuses() async throws {
        let (bus, bluetoothd, emulator, log) = try await Self.started(
            Self.profile(security: #"{"io": "KeyboardOnly", "passkey": "012345"}"#))
        let reply = try await bluetoothd.askAgent("RequestPasskey", [Self.device])
        #expect(reply == [.uint32(12345)])
        #expect(
            log.events(since: 0).contains {
                $0.kind == .pairing && $0.central == BluetoothAddress("F0:E0:D0:00:00:01")
                    && $0.detail?.contains("typed the profile's passkey") == true
            })
        // A static passkey is a secret of the device: never in the log (the registration note included).
        #expect(!log.events(since: 0).contains { $0.detail?.contains("012345") == true }, "\(log.events(since: 0).compactMap(\.detail))")
        await emulator.stop()

        let (bus2, refusing, other, _) = try await Self.started(Self.profile(security: #"{"pairing": "refuse"}"#))
        do {
            _ = try await refusing.askAgent("RequestAuthorization", [Self.device])
            Issue.record("a refusing profile accepted")
        } catch {
            #expect((error as? DBusError)?.name == "org.bluez.Error.Rejected")
        }
        await other.stop()
        _ = (bus, bus2)
    }

    /// `confirm: api`: the prompt waits for the control API, GATT calls are answered meanwhile, and the number
    /// typed decides a numeric comparison.
    @Test func promptsWaitForTheControlAPIWithoutHoldingUpGATT() async throws {
        let (bus, bluetoothd, emulator, log) = try await Self.started(Self.profile(security: #"{"io": "DisplayYesNo", "confirm": "api"}"#))
        let answered = Self.ask(bluetoothd, "RequestConfirmation", [Self.device, .uint32(42)])
        let status = try await Self.prompted(emulator)
        #expect(
            status.prompt
                == PairingSnapshot.Prompt(id: 1, central: BluetoothAddress("F0:E0:D0:00:00:01"), kind: .numericComparison, passkey: 42))
        // bluetoothd may call the application while a prompt waits.
        let application = try #require(bluetoothd.applications.first)
        let objects = try await bluetoothd.managedObjects(application.owner, application.path)
        let level = try #require(
            objects.first { $0.value[StandInBluetoothd.Names.gattCharacteristic]?["UUID"]?.string?.hasPrefix("00002a19") == true }?.key)
        #expect(try await bluetoothd.readValue(application.owner, level) == [0x64])

        // Numeric comparison wants a yes/no or the number: a passkey that differs refuses it.
        let done = try await emulator.answerPairing(prompt: 1, .passkey(43))
        #expect(done.central == BluetoothAddress("F0:E0:D0:00:00:01") && done.kind == .numericComparison)
        #expect(await answered.wait(for: 1) == ["org.bluez.Error.Rejected"])
        #expect(await emulator.pairingStatus().prompt == nil)
        do {
            _ = try await emulator.answerPairing(prompt: 1, .accept(true))
            Issue.record("answering with no prompt waiting succeeded")
        } catch {
            #expect(error.kind == .conflict)
        }
        #expect(log.events(since: 0).contains { $0.kind == .pairing && $0.detail?.contains("refused (control API)") == true })
        await emulator.stop()
        _ = bus
    }

    /// Pairing faults: `refuse` refuses the next pairing only, `wrongPasskey` types one off the profile's passkey
    /// and says numbers differ; a profile that does not pair takes no pairing fault.
    @Test func pairingFaultsRefuseAndAnswerWrongly() async throws {
        let (bus, bluetoothd, emulator, log) = try await Self.started(
            Self.profile(security: #"{"io": "KeyboardDisplay", "passkey": 999999}"#))
        let refuse = try FaultSpecDecoder.spec(JSONParser.parse(Array(#"{"refuse": true, "count": 1}"#.utf8), file: "f"))
        #expect(refuse.on == .pair)
        _ = try await emulator.addFault(refuse)
        do {
            _ = try await bluetoothd.askAgent("RequestAuthorization", [Self.device])
            Issue.record("the refuse fault did not refuse")
        } catch {
            #expect((error as? DBusError)?.name == "org.bluez.Error.Rejected")
        }
        _ = try await bluetoothd.askAgent("RequestAuthorization", [Self.device])  // count 1: the next one is accepted
        _ = try await emulator.addFault(
            FaultSpecDecoder.spec(JSONParser.parse(Array(#"{"on": "pair", "wrongPasskey": true}"#.utf8), file: "f")))
        #expect(try await bluetoothd.askAgent("RequestPasskey", [Self.device]) == [.uint32(0)], "999999 + 1 wraps to 000000")
        do {
            _ = try await bluetoothd.askAgent("RequestConfirmation", [Self.device, .uint32(5)])
            Issue.record("wrongPasskey confirmed a comparison")
        } catch {
            #expect((error as? DBusError)?.name == "org.bluez.Error.Rejected")
        }
        #expect(log.events(since: 0).filter { $0.kind == .fault }.count == 3)
        await emulator.stop()

        let (bus2, _, plain, _) = try await Self.started(Self.profile(security: nil))
        do {
            _ = try await plain.addFault(refuse)
            Issue.record("a profile that does not pair took a pairing fault")
        } catch {
            #expect(error.kind == .conflict && error.message.contains("does not pair"))
        }
        await plain.stop()
        _ = (bus, bus2)
    }

    /// `confirm: api` holds just works too, not only numeric comparison.
    @Test func justWorksWaitsForTheAPIWhenConfirmIsAPI() async throws {
        let (bus, bluetoothd, emulator, _) = try await Self.started(Self.profile(security: #"{"confirm": "api"}"#))
        let answered = Self.ask(bluetoothd, "RequestAuthorization", [Self.device])
        let status = try await Self.prompted(emulator)
        #expect(status.prompt == PairingSnapshot.Prompt(id: 1, central: BluetoothAddress("F0:E0:D0:00:00:01"), kind: .justWorks))
        _ = try await emulator.answerPairing(prompt: 1, .accept(false))
        #expect(await answered.wait(for: 1) == ["org.bluez.Error.Rejected"])
        await emulator.stop()
        _ = bus
    }

    /// An answer names the prompt it answers: when a newer question replaced the one the user saw, the answer meant
    /// for the first central is refused (409) and the newer prompt still waits, unanswered.
    @Test func anAnswerForAPromptNoLongerWaitingChangesNothing() async throws {
        let (bus, bluetoothd, emulator, _) = try await Self.started(Self.profile(security: #"{"confirm": "api"}"#))
        let first = Self.ask(bluetoothd, "RequestAuthorization", [Self.device])
        let seen = try #require(try await Self.prompted(emulator).prompt)
        let other: DBusValue = .objectPath("/org/bluez/hci0/dev_F0_E0_D0_00_00_02")
        let second = Self.ask(bluetoothd, "RequestAuthorization", [other])
        #expect(await first.wait(for: 1) == ["org.bluez.Error.Canceled"], "the newer question replaces the older")
        try await eventually { await emulator.pairingStatus().prompt?.id != seen.id }
        let waiting = try #require(await emulator.pairingStatus().prompt)
        #expect(waiting.id != seen.id && waiting.central == BluetoothAddress("F0:E0:D0:00:00:02"))
        do {
            _ = try await emulator.answerPairing(prompt: seen.id, .accept(true))
            Issue.record("an answer for a replaced prompt was taken")
        } catch {
            #expect(error.kind == .conflict && error.message.contains("prompt \(seen.id)"), "\(error.message)")
        }
        #expect(await emulator.pairingStatus().prompt == waiting, "the newer prompt still waits")
        #expect(second.values.isEmpty)
        _ = try await emulator.answerPairing(prompt: waiting.id, .accept(true))
        #expect(await second.wait(for: 1) == ["accepted"])
        await emulator.stop()
        _ = bus
    }

    /// The passkey gattemu displayed is shown until the pairing ends (paired, cancelled, or the central gone), not after.
    @Test func theDisplayedPasskeyIsClearedWhenThePairingEnds() async throws {
        let (bus, bluetoothd, emulator, _) = try await Self.started(Self.profile(security: #"{"io": "DisplayOnly"}"#))
        for end in [
            CentralEvent.paired(address: BluetoothAddress("F0:E0:D0:00:00:01")!),
            .disconnected(address: BluetoothAddress("F0:E0:D0:00:00:01")!), nil,
        ] {
            _ = try await bluetoothd.askAgent("DisplayPasskey", [Self.device, .uint32(123_456), .uint16(0)])
            #expect(
                await emulator.pairingStatus().displayed
                    == PairingSnapshot.Displayed(central: BluetoothAddress("F0:E0:D0:00:00:01"), passkey: 123_456))
            // Another central's pairing ending leaves it.
            await emulator.centralEvent(.disconnected(address: BluetoothAddress("F0:E0:D0:00:00:09")!))
            #expect(await emulator.pairingStatus().displayed != nil)
            if let end { await emulator.centralEvent(end) } else { await emulator.pairingCancelled(released: false) }
            #expect(await emulator.pairingStatus().displayed == nil, "\(String(describing: end))")
        }
        await emulator.stop()
        _ = bus
    }

    /// Only bluetoothd may ask the agent: another local client gets AccessDenied, and nothing is logged as pairing.
    @Test func nobodyButBluetoothdMayAskTheAgent() async throws {
        let (bus, bluetoothd, emulator, log) = try await Self.started(Self.profile(security: #"{"io": "KeyboardOnly", "passkey": 111111}"#))
        let agent = try #require(bluetoothd.defaultAgent)
        let stranger = try await DBusConnection.connect(to: .address(bus.address))
        do {
            _ = try await stranger.call(
                destination: agent.owner, path: agent.path, interface: StandInBluetoothd.Names.agent,
                member: "RequestPasskey", arguments: [Self.device])
            Issue.record("a stranger got a passkey")
        } catch {
            #expect(error.name == DBusError.Name.accessDenied)
        }
        #expect(!log.events(since: 0).contains { $0.kind == .pairing })
        await stranger.close()
        await emulator.stop()
    }
}
