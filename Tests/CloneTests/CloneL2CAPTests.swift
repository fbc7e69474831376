import BlueZ
import BlueZTestSupport
import Bluetooth
import DeviceClone
import Profile
import Replica
import Testing

/// A device that publishes an L2CAP channel's PSM (Apple's characteristic, as iOS accessories do): the clone keeps the
/// characteristic and its value, and its notes say the channel behind it is not emulated (issue 45: clone and relay at
/// least report a device's PSM characteristic).
@Suite struct CloneL2CAPTests {
    static func streamer(psm: [UInt8]) -> RemotePeripheral {
        var device = RemotePeripheral(address: "D4:36:39:00:00:81", name: "Streamer")
        device.services = [
            RemoteService(
                uuid: "12345678-0000-4000-8000-00000000abcd", handle: 0x0010,
                characteristics: [
                    RemoteCharacteristic(uuid: BluetoothUUID.l2capPSM.description, flags: ["read"], handle: 0x0011, value: psm)
                ])
        ]
        return device
    }

    @Test(.timeLimit(.minutes(5))) func theCloneOfADeviceWithAPSMSaysTheChannelIsNotEmulated() async throws {
        let rig = try await Rig([Self.streamer(psm: [0x81, 0x00])])
        let replica = CloneReplica.make(try await rig.record("Streamer"))
        let notes = replica.notes.filter { $0.hasPrefix("L2CAP:") }
        #expect(notes.count == 1, "\(replica.notes)")
        #expect(notes.first?.contains("PSM 0x0081 (129), LE dynamic range") == true, "\(notes)")
        #expect(notes.first?.contains("the profile serves the characteristic, not the channel") == true)
        let result = ReplicaProfile(replica).build()
        #expect(result.report.contains { $0.hasPrefix("L2CAP:") }, "the clone's report carries the note")
        let profile = try validated(result.text)
        let psm = try #require(profile.characteristics.first { $0.uuid == .l2capPSM })
        #expect(BehaviourEngine(profile: profile, environment: CloneTests.environment).value(of: psm.id) == [0x81, 0x00])
    }

    @Test func aPSMValueIsDescribedAsIOSReadsIt() {
        #expect(DeviceReplica.describePSM([0x25, 0x00]) == "PSM 0x0025 (37), fixed, SIG-assigned range")
        #expect(DeviceReplica.describePSM([0x00, 0x01]) == "PSM 0x0100 (256), outside the LE ranges")
        #expect(DeviceReplica.describePSM(nil) == "its value was not read")
        #expect(DeviceReplica.describePSM([1, 2, 3]) == "value 3 bytes, not a 16-bit PSM")
    }
}
