import BlueZ
import BlueZTestSupport
import DBus
import DBusTestSupport
import Emulator
import Profile
import Testing

/// A descriptor's read and write are logged under `characteristic/descriptor` (the event log's one text for an
/// attribute, which the control API, the dashboard and the report read back), through the stand-in bluetoothd.
@Suite struct DescriptorEventTests {
    static let device: DBusObjectPath = "/org/bluez/hci0/dev_F0_E0_D0_00_00_03"

    static let profile = #"""
        {"format": 1, "device": {"name": "Described"},
         "services": [{"id": "s", "uuid": "12345678-0000-4000-8000-000000000000", "characteristics": [
           {"id": "level", "uuid": "12345678-0000-4000-8000-000000000001", "flags": ["read"], "value": "2a",
            "descriptors": [{"id": "label", "uuid": "12345678-0000-4000-8000-0000000000d1", "flags": ["read", "write"],
                             "value": {"utf8": "Level"}}]}]}]}
        """#

    @Test(.timeLimit(.minutes(5))) func aDescriptorsOperationsAreLoggedUnderItsCharacteristic() async throws {
        let bus = try PrivateBus()
        let bluetoothd = try await StandInBluetoothd.withAdapter(bus)
        var options = EmulatorOptions()
        options.bus = .address(bus.address)
        let log = try EventLog(format: .json)
        let emulator = try Emulator(profile: try ProfileLoader.load(json: Self.profile, file: "described.json"), options: options, log: log)
        try await emulator.start()
        let application = try #require(bluetoothd.applications.first)
        let objects = try await bluetoothd.managedObjects(application.owner, application.path)
        let label = try #require(
            objects.first { $0.value[StandInBluetoothd.Names.gattDescriptor]?["UUID"]?.string?.hasSuffix("0000000000d1") == true }?.key)
        let request = StandInBluetoothd.options(device: Self.device)

        #expect(
            try await bluetoothd.readValue(application.owner, label, interface: StandInBluetoothd.Names.gattDescriptor, options: request)
                == Array("Level".utf8))
        try await bluetoothd.writeValue(
            application.owner, label, Array("Lvl".utf8), interface: StandInBluetoothd.Names.gattDescriptor, options: request)

        let operations = log.events(since: 0).filter { $0.kind == .read || $0.kind == .write }
        #expect(operations.map(\.kind) == [.read, .write])
        #expect(operations.map(\.characteristic) == ["level/label", "level/label"])
        #expect(operations.map(\.value) == [nil, Array("Lvl".utf8)], "a read is logged as asked, a write with its bytes")
        await emulator.stop()
    }
}
