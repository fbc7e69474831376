import BlueZTestSupport
import Bluetooth
import DBus
import DBusTestSupport
import Testing

@testable import BlueZ

/// Extended advertising (a secondary channel): where bluetoothd puts each field, the limits, the D-Bus properties.
@Suite struct ExtendedAdvertisingTests {
    static func beacon(bytes: Int) -> Advertisement {
        var advertisement = Advertisement()
        advertisement.kind = .broadcast
        advertisement.localName = "Beacon"
        advertisement.secondaryChannel = .twoM
        advertisement.manufacturerData = [0x004C: [UInt8](repeating: 0xAB, count: bytes)]
        advertisement.scanResponse.serviceUUIDs = [BluetoothUUID(0x180F)]
        advertisement.scanResponse.manufacturerData = [0xFFFF: [1, 2, 3]]
        return advertisement
    }

    @Test func extendedDataGoesUpTo251BytesAndLegacyStaysAt31() {
        // flags 3 + manufacturer data 2 + 2 + 244 = 251.
        let full = AdvertisementBudget(Self.beacon(bytes: 244))
        #expect(full.limits == .extendedMaximum)
        #expect(full.advertisingDataBytes == 251)
        #expect(full.fits, "\(full)")
        let over = AdvertisementBudget(Self.beacon(bytes: 245))
        #expect(!over.fits)
        #expect(over.description.contains("advertising data needs 252 of 251 bytes"))
        var legacy = Self.beacon(bytes: 26)
        legacy.secondaryChannel = nil
        #expect(!AdvertisementBudget(legacy).fits, "a legacy advertisement is held to 31 bytes")
        #expect(AdvertisementBudget(legacy).limits == .legacy)
        // An adapter's own, smaller limit.
        let small = AdvertisementBudget(Self.beacon(bytes: 100), limits: .init(advertisingData: 100, scanResponse: 251))
        #expect(!small.fits)
        #expect(small.description.contains("of 100 bytes"))
    }

    @Test func aBroadcastSetCarriesItsScanResponseFieldsAfterTheName() {
        let layout = AdvertisementLayout(Self.beacon(bytes: 4))
        #expect(layout.hasScanResponse)
        #expect(
            layout.scanResponse.map(\.field) == [
                "localName", "scanResponse.serviceUUIDs (1 × 16-bit)", "scanResponse.manufacturerData[0xFFFF]",
            ])
        #expect(
            layout.scanResponseStructures.bytes == [7, 0x09] + Array("Beacon".utf8) + [3, 0x03, 0x0F, 0x18] + [
                6, 0xFF, 0xFF, 0xFF, 1, 2, 3,
            ])
        #expect(!layout.advertisingData.contains { $0.field == "localName" })
    }

    @Test func aConnectableExtendedSetHasNoScanResponseAndCarriesItsName() {
        var advertisement = Self.beacon(bytes: 4)
        advertisement.kind = .peripheral
        advertisement.scanResponse = .init()
        let layout = AdvertisementLayout(advertisement)
        #expect(!layout.hasScanResponse)
        #expect(layout.advertisingData.contains { $0.field == "localName" })
        #expect(layout.scanResponseStructures.bytes.isEmpty)
        #expect(AdvertisementBudget(advertisement).fits)
        // Scan response fields would be dropped by bluetoothd: refused, named.
        advertisement.scanResponse.manufacturerData = [0xFFFF: [1]]
        let budget = AdvertisementBudget(advertisement)
        #expect(!budget.fits)
        #expect(budget.description.contains("no scan response"))
        #expect(budget.description.contains("scanResponse.manufacturerData[0xFFFF]"))
    }

    @Test func theAdvertisementExportsSecondaryChannelAndScanResponseProperties() {
        let properties = Self.beacon(bytes: 2).properties
        #expect(properties["SecondaryChannel"] == .string("2M"))
        #expect(properties["ScanResponseServiceUUIDs"] == .strings(["0000180f-0000-1000-8000-00805f9b34fb"]))
        #expect(
            properties["ScanResponseManufacturerData"]
                == .dictionary(
                    key: .uint16, value: .variant, [DBusDictionaryEntry(key: .uint16(0xFFFF), value: .variant(.bytes([1, 2, 3])))]))
        #expect(properties["ScanResponseData"] == nil)
        #expect(Advertisement().properties["SecondaryChannel"] == nil)
        // Every property it may export has a declared signature.
        let declared = Set(Advertisement.propertySignatures.map(\.name))
        #expect(Set(properties.keys).isSubset(of: declared))
    }

    @Test func capabilitiesAreReadFromTheAdvertisingManager() async throws {
        let bus = try PrivateBus()
        _ = try await StandInBluetoothd.withAdapter(bus)
        let stack = try await BlueZStack.connect(bus: .address(bus.address))
        let adapter = try await stack.adapter(nil)
        let capabilities = adapter.advertising
        #expect(capabilities.secondaryChannels == ["1M", "2M", "Coded"])
        #expect(capabilities.canSetTxPower)
        #expect(capabilities.maxAdvertisingDataLength == 251)
        #expect(capabilities.maxScanResponseLength == 251)
        #expect(capabilities.minTxPower == -127)
        #expect(capabilities.maxTxPower == 20)
        #expect(capabilities.limits(for: Self.beacon(bytes: 1)) == .init(advertisingData: 251, scanResponse: 251))
        #expect(capabilities.limits(for: Advertisement()) == .legacy)
        // A Bluetooth 4 controller's manager: no secondary channels, no capabilities.
        let legacy = AdvertisingCapabilities(["SupportedInstances": .byte(5)])
        #expect(legacy.secondaryChannels.isEmpty)
        #expect(!legacy.canSetTxPower)
        #expect(legacy.limits(for: Self.beacon(bytes: 1)) == .extendedMaximum)
        #expect(AdvertisingCapabilities(nil).supportedInstances == nil)
    }

    @Test func experimentalIsReadFromBluetoothdsCommandLine() {
        func line(_ arguments: [String]) -> [UInt8] { Array(arguments.joined(separator: "\u{0}").utf8) + [0] }
        #expect(BluetoothdConfiguration.experimental(commandLine: line(["/usr/sbin/bluetoothd", "-n", "-E"])))
        #expect(BluetoothdConfiguration.experimental(commandLine: line(["bluetoothd", "--experimental"])))
        #expect(BluetoothdConfiguration.experimental(commandLine: line(["bluetoothd", "-nE"])))
        #expect(!BluetoothdConfiguration.experimental(commandLine: line(["bluetoothd", "-n"])))
        #expect(!BluetoothdConfiguration.experimental(commandLine: line(["bluetoothd", "-fE.conf"])), "a config file named E.conf")
        #expect(BluetoothdConfiguration.experimental(commandLine: line(["bluetoothd", "-d", "-E"])))
        #expect(!BluetoothdConfiguration.experimental(commandLine: line(["-E"])), "the program name is not an option")
    }
}

extension ExtendedAdvertisingTests {
    /// A 32-bit UUID goes out in 4 bytes, in the UUID list and in service data (the status showed 16 before the
    /// budget and the bytes shared one layout).
    @Test func thirtyTwoBitUUIDsTakeFourBytes() {
        var advertisement = Advertisement()
        let uuid = BluetoothUUID("12345678-0000-1000-8000-00805f9b34fb")!
        advertisement.serviceUUIDs = [uuid]
        advertisement.serviceData = [uuid: [9]]
        let layout = AdvertisementLayout(advertisement)
        #expect(
            layout.advertisingDataStructures.bytes == [2, 0x01, 0x06, 5, 0x05, 0x78, 0x56, 0x34, 0x12, 6, 0x20, 0x78, 0x56, 0x34, 0x12, 9])
    }
}

extension ExtendedAdvertisingTests {
    /// bluetoothd before 5.87 cannot hand the kernel more than 244 bytes of an extended set: a refusal of a larger
    /// set says so (the sandbox's bluetoothd 5.82 carries the fix; stock ones fail with "Failed to register").
    @Test func aRefusedLargeExtendedSetNamesBluetoothdsLimit() {
        let large = Self.beacon(bytes: 236)
        let budget = AdvertisementBudget(large)
        #expect(budget.fits)
        #expect(budget.bluetoothdExtendedBytes > AdvertisementBudget.oldBluetoothdExtendedLimit)
        #expect(AdvertisementRegistration.refusal(of: large, budget: budget).contains("bluetoothd before 5.87 sends at most 244"))
        let small = Self.beacon(bytes: 20)
        #expect(AdvertisementRegistration.refusal(of: small, budget: AdvertisementBudget(small)) == "bluetoothd refused the advertisement")
    }
}
