import Bluetooth
import Capture
import CaptureImport
import CaptureTestSupport
import Profile
import Replica
import Testing

/// A HID device's capture (three Report characteristics with one UUID, two Battery services) imports, validates
/// and gives back the same table: services, characteristics and descriptors, handles and values, the duplicates
/// each in its place; its rules address the duplicates by their ids.
@Suite struct HIDImportTests {
    func imported() throws -> (text: String, profile: DeviceProfile) {
        let trace = try CaptureTrace.read(bytes: HIDSession.script().btsnoop())
        let replica = CaptureImport.replica(of: try CaptureImport.select(nil, in: trace), in: trace, source: "keyboard.btsnoop")
        let text = ReplicaProfile(replica).build().text
        let diagnostics = ProfileValidator.validate(json: text, file: "keyboard.json")
        #expect(diagnostics.map(\.description) == [], "\(text)")
        return (text, try ProfileLoader.load(json: text, file: "keyboard.json"))
    }

    /// A table as (UUID, handle, value) rows: services, then each characteristic and its descriptors.
    struct Row: Equatable, CustomStringConvertible {
        var kind: String, uuid: Bluetooth.BluetoothUUID?, handle: UInt16?, value: [UInt8]
        var description: String { "\(kind) \(uuid?.description ?? "?") @\(handle.map { String($0) } ?? "-") \(Hex.string(value))" }
    }

    @Test func theTableComesBackTheSameDuplicatesIncluded() throws {
        let profile = try imported().profile
        let engine = BehaviourEngine(profile: profile, environment: EngineEnvironment(adapterAddress: .zero))
        var got: [Row] = []
        for service in profile.services {
            got.append(Row(kind: "service", uuid: service.uuid, handle: service.handle?.rawValue, value: []))
            for characteristic in service.characteristics {
                got.append(
                    Row(
                        kind: "characteristic", uuid: characteristic.uuid, handle: characteristic.handle?.rawValue,
                        value: engine.value(of: characteristic.id)))
                for descriptor in characteristic.descriptors {
                    got.append(
                        Row(
                            kind: "descriptor", uuid: descriptor.uuid, handle: descriptor.handle?.rawValue,
                            value: profile.descriptorValue(descriptor, environment: engine.environment)))
                }
            }
        }
        // The device's table but Generic Access (BlueZ's own) and the client configurations (BlueZ adds them).
        var expected: [Row] = []
        for service in HIDSession.table where service.uuid != 0x1800 {
            expected.append(Row(kind: "service", uuid: Bluetooth.BluetoothUUID(service.uuid), handle: service.start, value: []))
            for characteristic in service.characteristics {
                expected.append(
                    Row(
                        kind: "characteristic", uuid: Bluetooth.BluetoothUUID(characteristic.uuid), handle: characteristic.valueHandle,
                        value: characteristic.value))
                for descriptor in characteristic.descriptors where descriptor.uuid != 0x2902 {
                    expected.append(
                        Row(
                            kind: "descriptor", uuid: Bluetooth.BluetoothUUID(descriptor.uuid), handle: descriptor.handle,
                            value: descriptor.value))
                }
            }
        }
        #expect(got == expected)
        let report = Bluetooth.BluetoothUUID(0x2A4D).description.lowercased()
        let hid = try #require(profile.services.first { $0.uuid.description == Bluetooth.BluetoothUUID(0x1812).description.lowercased() })
        #expect(hid.characteristics.filter { $0.uuid.description == report }.map(\.id) == ["report", "report_2", "report_3"])
        #expect(profile.services.map(\.id) == ["human_interface_device", "battery", "battery_2", "device_information"])
        #expect(
            profile.services.compactMap { $0.characteristics.first { $0.uuid.description.hasPrefix("00002a19") }?.id } == [
                "battery_level", "battery_level_2",
            ])
    }

    /// The recorded answer came on the second Report: the rule writes the third (the output Report) and notifies
    /// the second, by id, and the engine sends it there.
    @Test func theReplayAddressesEachReportByID() throws {
        let (text, profile) = try imported()
        #expect(text.contains("\"write\": \"report_3\""), "\(text)")
        var engine = BehaviourEngine(profile: profile, environment: EngineEnvironment(adapterAddress: .zero))
        let phone = CentralID(address: BluetoothAddress("11:22:33:44:55:66")!)
        _ = engine.handle(.connect(phone))
        _ = engine.handle(.subscribe(characteristic: "report", central: phone))
        _ = engine.handle(.subscribe(characteristic: "report_2", central: phone))
        let outcome = engine.handle(.write(characteristic: "report_3", central: phone, value: [0x02], withResponse: true))
        #expect(outcome.notifications.map(\.characteristic) == ["report_2"])
        #expect(outcome.notifications.map(\.value) == [[0xE9, 0x00]])
    }
}
