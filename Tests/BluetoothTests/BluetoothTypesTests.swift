import Bluetooth
import Testing

@Suite struct BluetoothAddressTests {
    @Test func parsesAndPrintsEveryForm() throws {
        let address = try #require(BluetoothAddress("d0:1f:a6:44:b3:6f"))
        #expect(address.description == "D0:1F:A6:44:B3:6F")
        #expect(address.compact == "D01FA644B36F")
        #expect(BluetoothAddress("D01FA644B36F") == address)
        #expect(BluetoothAddress("D0-1F-A6-44-B3-6F") == address)
        #expect(BluetoothAddress(littleEndian: [0x6F, 0xB3, 0x44, 0xA6, 0x1F, 0xD0]) == address)
        #expect(address.littleEndian == [0x6F, 0xB3, 0x44, 0xA6, 0x1F, 0xD0])
        for bad in ["", "D0:1F:A6:44:B3", "D0:1F:A6:44:B3:6G", "D01:FA6:44B:36F:", "D0:1F:A6:44:B3:6F:00", "D0:1FA6:44:B3:6F:"] {
            #expect(BluetoothAddress(bad) == nil, "\(bad)")
        }
        #expect(BluetoothAddress.zero.description == "00:00:00:00:00:00")
        #expect(BluetoothAddress("C0:00:00:00:00:01")?.randomKind == .staticAddress)
        #expect(BluetoothAddress("40:00:00:00:00:01")?.randomKind == .resolvablePrivate)
    }
}

@Suite struct BluetoothUUIDTests {
    @Test func shortAndLongFormsAreTheSameUUID() throws {
        let battery = BluetoothUUID(0x180F)
        #expect(battery.description == "0000180f-0000-1000-8000-00805f9b34fb")
        for text in ["180f", "0x180F", "0000180f", "0000180F-0000-1000-8000-00805F9B34FB", "0000180f00001000800000805f9b34fb"] {
            #expect(BluetoothUUID(text) == battery, "\(text)")
        }
        #expect(battery.uint16 == 0x180F)
        #expect(battery.shortDescription == "180f")
        #expect(battery.name == "Battery")
        #expect(battery.littleEndian() == [0x0F, 0x18])
        #expect(battery.littleEndian(compact: false).count == 16)
        #expect(BluetoothUUID(littleEndian: [0x0F, 0x18]) == battery)
        let noke = try #require(BluetoothUUID("1bc50001-0200-d29e-e511-446c609db825"))
        #expect(noke.uint16 == nil && noke.uint32 == nil && noke.advertisedSize == 16)
        #expect(BluetoothUUID(littleEndian: noke.littleEndian()) == noke)
        let thirtyTwo = BluetoothUUID(uint32: 0x1234_5678)
        #expect(thirtyTwo.description == "12345678-0000-1000-8000-00805f9b34fb")
        #expect(thirtyTwo.littleEndian32 == [0x78, 0x56, 0x34, 0x12])
        #expect(BluetoothUUID(littleEndian: [0x78, 0x56, 0x34, 0x12]) == thirtyTwo)
        #expect(thirtyTwo.advertisedSize == 4)
        for bad in ["", "18f", "xyz0", "0000180f-0000-1000-8000-00805f9b34f", "0000180f+0000-1000-8000-00805f9b34fb"] {
            #expect(BluetoothUUID(bad) == nil, "\(bad)")
        }
        #expect(BluetoothUUID(littleEndian: [1, 2, 3]) == nil)
    }
}

@Suite struct ATTAndPropertiesTests {
    @Test func opcodesKnowTheirKindAndResponse() {
        #expect(ATTOpcode.readRequest.kind == .request)
        #expect(ATTOpcode.readRequest.response == .readResponse)
        #expect(ATTOpcode.writeCommand.kind == .command)
        #expect(ATTOpcode.handleValueIndication.kind == .indication)
        #expect(ATTOpcode.errorResponse.kind == .response)
        #expect(ATTOpcode(rawValue: 0x7F).kind == .unknown)
        #expect(ATTOpcode.readByGroupTypeRequest.description == "Read By Group Type Request")
        #expect(ATTErrorCode.insufficientEncryption.asksForSecurity)
        #expect(ATTErrorCode(rawValue: 0x80).description == "application error 0x80")
    }

    @Test func propertiesAndSecurityRoundTripThroughBlueZFlags() {
        let flags = ["read", "write", "notify", "encrypt-read", "secure-write", "encrypt-authenticated-notify"]
        let properties = CharacteristicProperties(bluezFlags: flags)
        #expect(properties == [.read, .write, .notify])
        #expect(properties.rawValue == 0x1A)
        #expect(properties.bluezFlags == ["read", "write", "notify"])
        let security = CharacteristicSecurity(bluezFlags: flags)
        #expect(security.read == .encrypted && security.write == .secure && security.notify == .authenticated)
        #expect(security.bluezFlags == ["encrypt-read", "secure-write", "encrypt-authenticated-notify"])
    }
}

@Suite struct AdvertisingDataTests {
    @Test func parsesEveryFieldAndBuildsTheSameBytes() throws {
        // flags, complete 128-bit UUID, manufacturer data, 16-bit service data, appearance, TX power, an unknown type
        let bytes: [UInt8] =
            [
                0x02, 0x01, 0x06,
                0x11, 0x07,
            ] + BluetoothUUID("1bc50001-0200-d29e-e511-446c609db825")!.littleEndian(compact: false)
            + [
                0x06, 0xFF, 0xFF, 0xFF, 0x40, 0x02, 0x0A,
                0x04, 0x16, 0x0F, 0x18, 0x64,
                0x03, 0x19, 0xC1, 0x03,
                0x02, 0x0A, 0xF8,
                0x03, 0x2A, 0xAB, 0xCD,
            ]
        let (data, problem) = AdvertisingData.parse(bytes)
        #expect(problem == nil)
        #expect(data.bytes == bytes)
        #expect(data.flags == 0x06)
        #expect(data.serviceUUIDs.map(\.description) == ["1bc50001-0200-d29e-e511-446c609db825"])
        #expect(data.manufacturerData.map(\.company) == [0xFFFF])
        #expect(data.manufacturerData.first?.data == [0x40, 0x02, 0x0A])
        #expect(data.serviceData.first?.uuid == BluetoothUUID(0x180F))
        #expect(data.serviceData.first?.data == [0x64])
        #expect(data.appearance == 0x03C1)
        #expect(data.txPower == -8)
        #expect(data.otherStructures == [ADStructure(type: ADType(rawValue: 0x2A), data: [0xAB, 0xCD])])
        #expect(data.encodedLength == bytes.count)
        #expect(!data.fitsLegacy)
    }

    @Test func namesPaddingAndTruncatedStructures() {
        let named = AdvertisingData.parse([0x09, 0x09] + Array("BLEProof".utf8) + [0, 0, 0]).data
        #expect(named.localName == "BLEProof" && named.hasCompleteLocalName)
        #expect(named.structures.count == 1, "zero length ends the data")
        let (kept, problem) = AdvertisingData.parse([0x02, 0x01, 0x06, 0x05, 0xFF, 0x01])
        #expect(kept.structures.count == 1)
        #expect(problem?.offset == 3)
    }
}
