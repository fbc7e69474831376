import BlueZ
import BlueZTestSupport
import Bluetooth
import DBus
import DBusTestSupport
import Foundation
import Profile
import Testing

@testable import Emulator

/// `gattemu relay`'s pairing: one agent answers both legs. What bluetoothd asks about the real device (the relay
/// is the central there) is answered as the relay's settings say; what it asks about a phone is the mirror
/// profile's, as for any emulated device.
@Suite struct RelayPairingTests {
    static let device = BluetoothAddress("F0:E0:D0:00:00:0D")!
    static let devicePath: DBusValue = .objectPath("/org/bluez/hci1/dev_F0_E0_D0_00_00_0D")
    static let phonePath: DBusValue = .objectPath("/org/bluez/hci0/dev_F0_E0_D0_00_00_01")

    /// The device side of the relay, doing nothing but naming the device.
    final class Upstream: RelayUpstream {
        let deviceAddress = RelayPairingTests.device
        let deviceAdapter = "hci1"
        let devicePairing: DevicePairing
        init(_ pairing: DevicePairing) { devicePairing = pairing }
        func read(_ attribute: GattAttributeID, offset: Int) async throws(ATTError) -> [UInt8] { [] }
        func write(_ attribute: GattAttributeID, value: [UInt8], offset: Int, withResponse: Bool) async throws(ATTError) {}
        func setSubscribed(_ characteristic: CharacteristicID, _ subscribed: Bool) async throws(ATTError) {}
        func central(_ central: BluetoothAddress, connected: Bool) async {}
        func checkLink() async -> String? { "a read" }
    }

    /// A relay of `profile` (default: an open device's, no advertisement) started.
    static func started(
        _ pairing: DevicePairing, security: String? = nil, flags: String = #"["read"]"#, profile: DeviceProfile? = nil
    ) async throws -> (PrivateBus, StandInBluetoothd, Emulator, EventLog) {
        let bus = try PrivateBus()
        let bluetoothd = try await StandInBluetoothd.withAdapter(bus)
        var options = EmulatorOptions()
        options.bus = .address(bus.address)
        let log = try EventLog(format: .text)
        let profile = try profile ?? PairingAgentTests.profile(security: security, flags: flags)
        let emulator = try Emulator(profile: profile, options: options, log: log)
        await emulator.relay(to: Upstream(pairing))
        try await emulator.start()
        return (bus, bluetoothd, emulator, log)
    }

    /// A relay always has an agent (the device may ask for security whatever the mirror's profile says), with
    /// KeyboardDisplay; the device's just works and numeric comparison are accepted, while a phone pairing with
    /// the mirror of an open device is refused as the profile says.
    @Test func theDevicesPairingIsAcceptedAndAPhonesFollowsTheMirrorsProfile() async throws {
        let (bus, bluetoothd, emulator, log) = try await Self.started(DevicePairing())
        #expect(bluetoothd.defaultAgent?.capability == "KeyboardDisplay")
        #expect(await emulator.pairingStatus().agent)
        _ = try await bluetoothd.askAgent("RequestAuthorization", [Self.devicePath])
        _ = try await bluetoothd.askAgent("RequestConfirmation", [Self.devicePath, .uint32(424_242)])
        do {
            _ = try await bluetoothd.askAgent("RequestConfirmation", [Self.phonePath, .uint32(424_242)])
            Issue.record("a phone paired with the mirror of a device that never asked for it")
        } catch {
            #expect((error as? DBusError)?.name == "org.bluez.Error.Rejected")
        }
        let details = log.events(since: 0).filter { $0.kind == .pairing }.map { "\($0.central?.description ?? "-") \($0.detail ?? "")" }
        #expect(details.contains("F0:E0:D0:00:00:0D device: numeric comparison 424242: accepted"), "\(details)")
        #expect(details.contains { $0.hasPrefix("F0:E0:D0:00:00:01 ") && $0.contains("refused (the profile does not pair)") }, "\(details)")
        await emulator.stop()
        #expect(bluetoothd.agents.isEmpty)
        _ = bus
    }

    /// The device leg is the device's address on the adapter the relay reaches it on, nothing else: a central on the
    /// mirror's adapter that takes the device's address (a random static address is one `btmgmt static-addr` away)
    /// gets the mirror profile's answers (here: it does not pair), never `--device-passkey` or the device leg's just
    /// works; on an adapter the relay does not serve it is refused.
    @Test func theDevicesAddressOnAnotherAdapterIsNotTheDevice() async throws {
        let (bus, bluetoothd, emulator, log) = try await Self.started(DevicePairing(passkey: 4321))
        for adapter in ["hci0", "hci2"] {
            let impostor: DBusValue = .objectPath(DBusObjectPath("/org/bluez/\(adapter)/dev_F0_E0_D0_00_00_0D"))
            for (member, arguments) in [
                ("RequestAuthorization", [impostor]), ("RequestConfirmation", [impostor, .uint32(424_242)]),
                ("RequestPasskey", [impostor]),
            ] {
                do {
                    let reply = try await bluetoothd.askAgent(member, arguments)
                    Issue.record("\(member) from the device's address on \(adapter) answered \(reply)")
                } catch {
                    #expect((error as? DBusError)?.name == "org.bluez.Error.Rejected", "\(member) on \(adapter): \(error)")
                }
            }
        }
        #expect(try await bluetoothd.askAgent("RequestPasskey", [Self.devicePath]) == [.uint32(4321)], "the device itself")
        let details = log.events(since: 0).filter { $0.kind == .pairing }.compactMap(\.detail)
        #expect(details.filter { $0.hasPrefix("device:") }.count == 1, "\(details)")
        #expect(details.contains { $0.contains("refused (the profile does not pair)") }, "\(details)")
        #expect(details.contains { $0.contains("on hci2: refused") }, "\(details)")
        await emulator.stop()
        _ = bus
    }

    /// The passkey the device displays: typed from `--device-passkey`, or asked of the control API with a prompt
    /// marked as the device's, whose answer bluetoothd gets.
    @Test func theDevicesPasskeyComesFromTheSettingsOrTheControlAPI() async throws {
        let (bus, bluetoothd, emulator, log) = try await Self.started(DevicePairing(passkey: 4321))
        #expect(try await bluetoothd.askAgent("RequestPasskey", [Self.devicePath]) == [.uint32(4321)])
        #expect(!log.events(since: 0).contains { $0.detail?.contains("004321") == true }, "the device's passkey is not logged")
        await emulator.stop()

        let (bus2, asking, other, _) = try await Self.started(DevicePairing(), security: "{}")
        let answered = AsyncCollector<[DBusValue]>()
        Task { answered.append((try? await asking.askAgent("RequestPasskey", [Self.devicePath])) ?? []) }
        let status = try await PairingAgentTests.prompted(other)
        let prompt = try #require(status.prompt)
        #expect(prompt.device && prompt.central == Self.device && prompt.kind == .passkeyEntry)
        _ = try await other.answerPairing(prompt: prompt.id, .passkey(987_654))
        #expect(await answered.wait(for: 1) == [[.uint32(987_654)]])

        // The device asks the relay to type on it (the relay shows the passkey): shown as the device's.
        _ = try await asking.askAgent("DisplayPasskey", [Self.devicePath, .uint32(123_456), .uint16(0)])
        #expect(await other.pairingStatus().displayed == PairingSnapshot.Displayed(central: Self.device, passkey: 123_456, device: true))
        await other.stop()
        _ = (bus, bus2)
    }

    /// `--device-pairing refuse`: the relay does not pair with the device; the phone's pairing is the mirror's.
    @Test func refusingTheDevicesPairingLeavesThePhonesAlone() async throws {
        let (bus, bluetoothd, emulator, _) = try await Self.started(DevicePairing(accept: false), flags: #"["read", "encrypt-read"]"#)
        do {
            _ = try await bluetoothd.askAgent("RequestConfirmation", [Self.devicePath, .uint32(1)])
            Issue.record("paired with the device although told not to")
        } catch {
            #expect((error as? DBusError)?.name == "org.bluez.Error.Rejected")
        }
        _ = try await bluetoothd.askAgent("RequestAuthorization", [Self.phonePath])
        await emulator.stop()
        _ = bus
    }

    /// While the relay's device is away the mirror does not advertise, whatever asks it to (a power-on signal, a
    /// recovery): the responder says so (``GattResponder/mayAdvertise``); back, it advertises again.
    @Test func theMirrorDoesNotAdvertiseWhileTheDeviceIsAway() async throws {
        let profile = try ProfileLoader.load(
            json: #"""
                {"format": 1, "device": {"name": "Lock"}, "advertisements": [{"type": "peripheral", "localName": "Lock"}],
                 "services": [{"id": "s", "uuid": "180f", "characteristics": [
                   {"id": "level", "uuid": "2a19", "flags": ["read"], "value": {"hex": "64"}}]}]}
                """#, file: "mirror.json")
        let (bus, bluetoothd, emulator, log) = try await Self.started(DevicePairing(), profile: profile)
        #expect(bluetoothd.advertisements.count == 1)
        await emulator.deviceLost("the link dropped")
        try #require(try await eventually { bluetoothd.advertisements.isEmpty })
        try await emulator.startAdvertising()
        #expect(bluetoothd.advertisements.isEmpty, "advertised while the device is away")
        await emulator.deviceBack()
        #expect(bluetoothd.advertisements.count == 1)
        let kinds: [EmulatorEventKind] = log.events(since: 0).map(\.kind).filter { $0 == .deviceLost || $0 == .deviceBack }
        #expect(kinds == [.deviceLost, .deviceBack])
        await emulator.stop()
        _ = bus
    }
}

/// `POST /v1/relay/snapshot` while another is being written: refused (409) at once, not queued on a thread; and the
/// emulator keeps answering meanwhile (the writing holds no cooperative thread, nor the D-Bus loop).
@Suite struct RelaySnapshotTests {
    /// A relay of an open device whose snapshots are written by `work`, started.
    static func started(writing work: @escaping RelaySnapshotWork) async throws -> (PrivateBus, StandInBluetoothd, Emulator) {
        let bus = try PrivateBus()
        let bluetoothd = try await StandInBluetoothd.withAdapter(bus)
        var options = EmulatorOptions()
        options.bus = .address(bus.address)
        let emulator = try Emulator(profile: PairingAgentTests.profile(security: nil), options: options, log: try EventLog(format: .text))
        await emulator.relay(to: RelayPairingTests.Upstream(DevicePairing()), snapshot: { work })
        try await emulator.start()
        return (bus, bluetoothd, emulator)
    }

    @Test(.timeLimit(.minutes(5))) func aSecondSnapshotWhileOneIsWrittenIsRefused() async throws {
        let release = DispatchSemaphore(value: 0)
        let entered = AsyncCollector<Int>()
        let (bus, bluetoothd, emulator) = try await Self.started {
            entered.append(1)
            release.wait()
            return RelaySnapshot(operations: 7, notRecorded: 0)
        }
        let first = Task { try await emulator.relaySnapshot() }
        let writing = try await eventually { !entered.values.isEmpty }
        try #require(writing)
        do {
            _ = try await emulator.relaySnapshot()
            Issue.record("a second snapshot was taken while one was written")
        } catch {
            #expect(error.kind == .conflict && error.message.contains("a snapshot is being written"), "\(error)")
        }
        #expect(await emulator.pairingStatus().agent, "the emulator answers while the snapshot is written")
        release.signal()
        #expect(try await first.value.operations == 7)
        release.signal()
        #expect(try await emulator.relaySnapshot().operations == 7, "free again once the first is written")
        await emulator.stop()
        _ = (bus, bluetoothd)
    }

    /// At exit the relay writes the whole session once more: ending the snapshots waits for the one being written
    /// (so that an older recording cannot land after the exit's), and refuses any asked after it.
    @Test(.timeLimit(.minutes(5))) func endingSnapshotsWaitsForTheOneBeingWrittenAndRefusesMore() async throws {
        let release = DispatchSemaphore(value: 0)
        let order = AsyncCollector<String>()
        let (bus, bluetoothd, emulator) = try await Self.started {
            order.append("writing")
            release.wait()
            order.append("written")
            return RelaySnapshot(operations: 3, notRecorded: 0)
        }
        var released = false
        defer { if !released { release.signal() } }  // a failed #require must not leave the writer blocked
        let first = Task { try await emulator.relaySnapshot() }
        try #require(try await eventually { order.values == ["writing"] })
        let ended = Task {
            await emulator.endRelaySnapshots()
            order.append("ended")
        }
        try #require(try await eventually { await emulator.relayState.snapshotsEnded })
        do {
            _ = try await emulator.relaySnapshot()
            Issue.record("a snapshot was taken after the snapshots ended")
        } catch {
            #expect(error.kind == .conflict && error.message.contains("the relay is stopping"), "\(error)")
        }
        #expect(order.values == ["writing"], "ending waits while the snapshot is written")
        release.signal()
        released = true
        await ended.value
        #expect(order.values == ["writing", "written", "ended"])
        #expect(try await first.value.operations == 3)
        do {
            _ = try await emulator.relaySnapshot()
            Issue.record("a snapshot was taken after the one being written when the snapshots ended")
        } catch {
            #expect(error.kind == .conflict && error.message.contains("the relay is stopping"), "\(error)")
        }
        #expect(order.values == ["writing", "written", "ended"], "no snapshot was written after the end")
        await emulator.endRelaySnapshots()  // again, and with none under way: at once
        await emulator.stop()
        _ = (bus, bluetoothd)
    }
}
