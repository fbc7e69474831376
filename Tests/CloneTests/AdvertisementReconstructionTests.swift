import Bluetooth
import DBus
import Testing

@testable import BlueZ
@testable import DeviceClone

/// The advertisement rebuilt from `Device1`'s properties fits legacy advertising where the device's did.
@Suite struct AdvertisementReconstructionTests {
    static func device() -> DeviceProperties {
        var device = DeviceProperties(path: DBusObjectPath("/org/bluez/hci0/dev_00_AA_01_04_00_04"))
        device.advertisingFlags = [0x06]
        device.serviceUUIDs = [BluetoothUUID("b5a90000-3c1e-4f7d-9e52-8d0c6a1f2e47")!]
        device.manufacturerData = [0xFFFF: [0x62, 0x64, 0x03]]
        device.name = "BumbleDev"
        return device
    }

    /// BlueZ 5.82 fills `Appearance` from the GAP service it reads after connecting (and keeps it for a bonded
    /// device): a device that advertised 28 bytes then "needs" 32, and the relay of it exited with "advertisement does
    /// not fit". Fields that do not fit go to the scan response while it has room, and the notes say so.
    @Test func fieldsBeyondTheLegacyLimitMoveToTheScanResponse() {
        var device = Self.device()
        device.appearance = 0x0340
        device.txPower = 4
        let rebuilt = AdvertisementReconstruction(device, adapter: "hci3")
        // 35 bytes: the appearance (4) moves, least telling first, and the rest (31) fits.
        #expect(rebuilt.advertisingData.fitsLegacy)
        #expect(rebuilt.advertisingData.structures.map(\.type) == [.flags, .completeServiceUUIDs128, .manufacturerData, .txPowerLevel])
        #expect(rebuilt.scanResponse.structures.map(\.type) == [.completeLocalName, .appearance])
        #expect(rebuilt.scanResponse.fitsLegacy)
        #expect(rebuilt.notes.contains { $0.hasPrefix("advertisement: appearance moved to the scan response") })
        #expect(!rebuilt.notes.contains { $0.contains("more than the legacy 31") })
    }

    @Test func whatFitsStaysWhereItIs() {
        var device = Self.device()
        device.manufacturerData = [0xFFFF: [0x62]]
        device.appearance = 0x0340
        let rebuilt = AdvertisementReconstruction(device, adapter: "hci3")
        #expect(rebuilt.advertisingData.structures.map(\.type) == [.flags, .completeServiceUUIDs128, .manufacturerData, .appearance])
        #expect(rebuilt.scanResponse.structures.map(\.type) == [.completeLocalName])
        #expect(!rebuilt.notes.contains { $0.contains("moved to the scan response") })
    }

    /// More than both hold (fields BlueZ kept from several advertisements, or extended advertising): said, not hidden.
    @Test func whatFitsNowhereIsSaid() {
        var device = Self.device()
        device.manufacturerData = [0xFFFF: [UInt8](repeating: 0x11, count: 20), 0x004C: [UInt8](repeating: 0x22, count: 20)]
        let rebuilt = AdvertisementReconstruction(device, adapter: "hci3")
        #expect(!rebuilt.advertisingData.fitsLegacy || !rebuilt.scanResponse.fitsLegacy)
        #expect(rebuilt.scanResponse.fitsLegacy)
        #expect(rebuilt.notes.contains { $0.contains("more than the legacy 31") })
    }
}
