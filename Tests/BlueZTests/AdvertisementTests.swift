import BlueZTestSupport
import Bluetooth
import DBus
import DBusTestSupport
import Testing

@testable import BlueZ

@Suite struct AdvertisementTests {
    static func noke() -> Advertisement {
        var advertisement = Advertisement()
        advertisement.localName = "NOKE3E_00AA01010001"
        advertisement.serviceUUIDs = [BluetoothUUID("1bc50001-0200-d29e-e511-446c609db825")!]
        advertisement.manufacturerData = [0xFFFF: [0x40, 2, 10, 0, 0]]
        return advertisement
    }

    @Test func budgetCountsWhatBlueZPutsOnAir() {
        let budget = AdvertisementBudget(Self.noke())
        // flags 3 + 128-bit UUID list 18 + manufacturer data 2+2+5 = 30; the name goes in the scan response.
        #expect(budget.advertisingDataBytes == 30)
        #expect(budget.scanResponseBytes == 21)
        #expect(budget.fits)
        var mixed = Advertisement()
        mixed.serviceUUIDs = ["180f", "0000180a-0000-1000-8000-00805f9b34fb", "12345678-0000-1000-8000-00805f9b34fb"].map {
            BluetoothUUID($0)!
        }
        mixed.serviceData = [BluetoothUUID(0x180F): [1]]
        mixed.includes = ["tx-power"]
        mixed.appearance = 0x0341
        // flags 3, 16-bit list 2+4, 32-bit list 2+4, service data 2+2+1, appearance 4, tx power 3.
        #expect(AdvertisementBudget(mixed).advertisingDataBytes == 27)
    }

    @Test func anAdvertisementThatDoesNotFitNamesItsFields() async throws {
        var big = Self.noke()
        big.manufacturerData = [0xFFFF: [UInt8](repeating: 0, count: 7)]
        big.localName = String(repeating: "N", count: 30)
        let budget = AdvertisementBudget(big)
        #expect(!budget.fits)
        #expect(budget.description.contains("advertising data needs 32 of 31 bytes"))
        #expect(budget.description.contains("manufacturerData[0xFFFF] 11"))
        #expect(budget.description.contains("scan response needs 32 of 31 bytes (localName 32)"))

        let bus = try PrivateBus()
        let bluetoothd = try await StandInBluetoothd.withAdapter(bus)
        let stack = try await BlueZStack.connect(bus: .address(bus.address))
        let adapter = try await stack.adapter(nil)
        await #expect(throws: BlueZError.self) {
            _ = try await AdvertisementRegistration.register(big, adapter: adapter, stack: stack)
        }
        #expect(bluetoothd.advertisements.isEmpty, "refused before registering")
    }

    @Test func registeredAdvertisementExposesBlueZProperties() async throws {
        let bus = try PrivateBus()
        let bluetoothd = try await StandInBluetoothd.withAdapter(bus)
        let stack = try await BlueZStack.connect(bus: .address(bus.address))
        let adapter = try await stack.adapter("00:aa:01:01:00:01")
        #expect(adapter.name == "hci0")
        #expect(adapter.supportedInstances == 4)
        #expect(adapter.supportedIncludes == ["tx-power", "appearance", "local-name"])
        let registration = try await AdvertisementRegistration.register(Self.noke(), adapter: adapter, stack: stack)
        #expect(bluetoothd.advertisements.map(\.path) == ["/org/gattemu/advertisement0"])
        let all = try await bluetoothd.call(
            stack.connection.uniqueName, registration.path, "org.freedesktop.DBus.Properties", "GetAll", [.string(BlueZNames.advertisement)]
        )
        let properties = try #require(all.first?.stringKeyedDictionary)
        #expect(properties["Type"] == .string("peripheral"))
        #expect(properties["LocalName"] == .string("NOKE3E_00AA01010001"))
        #expect(properties["ServiceUUIDs"] == .strings(["1bc50001-0200-d29e-e511-446c609db825"]))
        #expect(
            properties["ManufacturerData"]
                == .dictionary(
                    key: .uint16, value: .variant,
                    [
                        DBusDictionaryEntry(key: .uint16(0xFFFF), value: .variant(.bytes([0x40, 2, 10, 0, 0])))
                    ]))
        #expect(properties["Appearance"] == nil)

        let changes = AsyncCollector<DBusSignal>()
        _ = try await bluetoothd.connection.subscribe(to: DBusMatchRule(path: registration.path, member: "PropertiesChanged")) {
            changes.append($0)
        }
        var unlocked = Self.noke()
        unlocked.manufacturerData = [0xFFFF: [0x00, 2, 10, 0, 0]]
        try await registration.update(unlocked)
        let received = await changes.wait(for: 1)
        #expect(received.first?.arguments[1].stringKeyedDictionary?.keys.sorted() == ["ManufacturerData"])

        _ = try await bluetoothd.call(stack.connection.uniqueName, registration.path, BlueZNames.advertisement, "Release")
        #expect(!registration.isRegistered)
        await registration.unregister()
        #expect(bluetoothd.advertisements.count == 1, "a released advertisement is not unregistered again")
    }

    /// bluetoothd 5.66 answers an advertisement's `PropertiesChanged` with a management command whose reply it hands
    /// to the advertisement's client, uncancelled when the client goes (src/advertising.c, `properties_changed` →
    /// `refresh_advertisement(client, NULL, NULL)`): an `UnregisterAdvertisement` right after an update freed the
    /// client under that reply and bluetoothd died (the sandbox, twice: gattemu stopped 20 ms after a rule changed
    /// the advertisement). Unregistering waits until ``AdvertisementRegistration/refreshSettle`` has passed since
    /// the last update; an update after unregistering sends nothing.
    @Test func unregisteringRightAfterAnUpdateLetsBluetoothdFinishItsRefresh() async throws {
        let bus = try PrivateBus()
        let bluetoothd = try await StandInBluetoothd.withAdapter(bus)
        let stack = try await BlueZStack.connect(bus: .address(bus.address))
        let adapter = try await stack.adapter("00:aa:01:01:00:01")
        let registration = try await AdvertisementRegistration.register(Self.noke(), adapter: adapter, stack: stack)
        let changes = AsyncCollector<DBusSignal>()
        _ = try await bluetoothd.connection.subscribe(to: DBusMatchRule(path: registration.path, member: "PropertiesChanged")) {
            changes.append($0)
        }
        var unlocked = Self.noke()
        unlocked.manufacturerData = [0xFFFF: [0x00, 2, 10, 0, 0]]
        let updated = ContinuousClock.now
        #expect(try await registration.update(unlocked))
        await registration.unregister()
        #expect(ContinuousClock.now - updated >= AdvertisementRegistration.refreshSettle)
        #expect(bluetoothd.advertisements.isEmpty)
        #expect(await changes.wait(for: 1).count == 1)

        #expect(try await registration.update(Self.noke()) == false, "unregistered: nothing to tell bluetoothd")
        try await Task.sleep(for: .milliseconds(200))
        #expect(changes.values.count == 1)

        // Without an update, unregistering does not wait (a settle of a minute tells that apart on a slow machine).
        let again = try await AdvertisementRegistration.register(Self.noke(), adapter: adapter, stack: stack)
        again.settle = .seconds(60)
        let started = ContinuousClock.now
        await again.unregister()
        #expect(ContinuousClock.now - started < .seconds(30))
    }

    @Test func missingBluetoothdAndAdaptersGiveOneLineReasons() async throws {
        let bus = try PrivateBus()
        await #expect(throws: BlueZError.self) {
            _ = try await BlueZStack.connect(bus: .address(bus.address))
        }
        do {
            _ = try await BlueZStack.connect(bus: .address(bus.address))
        } catch {
            #expect(error.description == "org.bluez not on the system bus: is bluetoothd running?")
        }
        _ = try await StandInBluetoothd.withAdapter(bus)
        let stack = try await BlueZStack.connect(bus: .address(bus.address))
        do {
            _ = try await stack.adapter("hci9")
            Issue.record("hci9 should not exist")
        } catch {
            #expect(error.description == "adapter hci9 not found (available: hci0)")
        }
    }

    @Test func devicePathsGiveAddresses() {
        #expect(BlueZDevicePath.address(of: "/org/bluez/hci0/dev_00_AA_01_02_00_02") == address("00:AA:01:02:00:02"))
        #expect(BlueZDevicePath.address(of: "/org/bluez/hci0/dev_00_AA_01_02_00_02", on: "/org/bluez/hci0") == address("00:AA:01:02:00:02"))
        #expect(BlueZDevicePath.address(of: "/org/bluez/hci1/dev_00_AA_01_02_00_02", on: "/org/bluez/hci0") == nil)
        #expect(BlueZDevicePath.address(of: "/org/bluez/hci0/x/dev_00_AA_01_02_00_02", on: "/org/bluez/hci0") == nil)
        #expect(BlueZDevicePath.address(of: "/org/bluez/hci0/dev_00_AA_01_02_00_0G") == nil)
        #expect(BlueZDevicePath.address(of: "/org/bluez/hci0/dev_00_AA_01_02_00:02") == nil)
        #expect(BlueZDevicePath.address(of: "/org/bluez/hci0") == nil)
        #expect(BlueZDevicePath.address(of: "/org/bluez/hci0/dev_00_AA") == nil)
    }
}
