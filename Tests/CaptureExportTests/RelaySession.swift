import Bluetooth
import Replica

/// A relayed session as `gattemu relay` records it: a GAP service, a secondary Battery service included by a
/// 128-bit primary service, characteristics with 16- and 128-bit UUIDs, client configurations and a user
/// description, a 300-byte value read and written whole (MTU 185), notifications, an indication, errors (one
/// asking for pairing), and two connections.
enum RelaySession {
    static let device = BluetoothAddress("C0:11:22:33:44:55")!
    static let phone = BluetoothAddress("5C:F3:70:AA:BB:CC")!
    /// 2026-11-25 06:00:00 UTC.
    static let start: Int64 = 1_795_586_400_000_000
    static let service = BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e")!
    static let command = BluetoothUUID("6e400002-b5a3-f393-e0a9-e50e24dcca9e")!
    static let status = BluetoothUUID("6e400003-b5a3-f393-e0a9-e50e24dcca9e")!
    static let long = BluetoothUUID("6e400005-b5a3-f393-e0a9-e50e24dcca9e")!
    static let secret = BluetoothUUID("6e400006-b5a3-f393-e0a9-e50e24dcca9e")!
    static let longValue: [UInt8] = (0..<300).map { UInt8($0 % 251) }
    static let longWrite: [UInt8] = (0..<300).map { UInt8(255 - $0 % 256) }

    static func replica() -> DeviceReplica {
        var replica = DeviceReplica(source: "relay of C0:11:22:33:44:55")
        replica.address = device
        replica.addressType = .random
        replica.name = "RelayLock"
        replica.mtu = 185
        replica.advertisingData = AdvertisingData([
            ADStructure(type: .flags, data: [0x06]), ADStructure(type: .shortenedLocalName, data: Array("Relay".utf8)),
            ADStructure(type: .completeServiceUUIDs128, data: service.littleEndian(compact: false)),
        ])
        replica.scanResponse = AdvertisingData([
            ADStructure(type: .txPowerLevel, data: [0xF8]), ADStructure(type: .manufacturerData, data: [0x59, 0x00, 0x01, 0x02]),
        ])

        var gap = DeviceReplica.Service(uuid: BluetoothUUID(0x1800), handle: 1, endHandle: 3)
        var name = DeviceReplica.Characteristic(uuid: .deviceName, properties: [.read], declarationHandle: 2, valueHandle: 3)
        name.value = Array("RelayLock".utf8)
        gap.characteristics = [name]

        var battery = DeviceReplica.Service(uuid: BluetoothUUID(0x180F), isPrimary: false, handle: 4, endHandle: 7)
        var level = DeviceReplica.Characteristic(
            uuid: BluetoothUUID(0x2A19), properties: [.read, .notify], declarationHandle: 5, valueHandle: 6)
        level.value = [87]
        level.descriptors = [DeviceReplica.Descriptor(uuid: .clientCharacteristicConfiguration, handle: 7)]
        battery.characteristics = [level]

        var main = DeviceReplica.Service(uuid: service, handle: 8, endHandle: 22)
        main.includes = [4]
        let commandCharacteristic = DeviceReplica.Characteristic(
            uuid: command, properties: [.write, .writeWithoutResponse], declarationHandle: 10, valueHandle: 11)
        var statusCharacteristic = DeviceReplica.Characteristic(
            uuid: status, properties: [.read, .notify], declarationHandle: 12, valueHandle: 13)
        statusCharacteristic.value = [0x01]
        statusCharacteristic.descriptors = [
            DeviceReplica.Descriptor(uuid: .clientCharacteristicConfiguration, handle: 14),
            DeviceReplica.Descriptor(uuid: .userDescription, handle: 15, value: Array("Status".utf8)),
        ]
        var longCharacteristic = DeviceReplica.Characteristic(
            uuid: long, properties: [.read, .write], declarationHandle: 16, valueHandle: 17)
        longCharacteristic.value = longValue
        var alarm = DeviceReplica.Characteristic(
            uuid: BluetoothUUID(0xFFF1), properties: [.indicate], declarationHandle: 18, valueHandle: 19)
        alarm.value = [0xA1]
        alarm.descriptors = [DeviceReplica.Descriptor(uuid: .clientCharacteristicConfiguration, handle: 20)]
        var secretCharacteristic = DeviceReplica.Characteristic(uuid: secret, properties: [.read], declarationHandle: 21, valueHandle: 22)
        secretCharacteristic.security.read = .encrypted
        main.characteristics = [commandCharacteristic, statusCharacteristic, longCharacteristic, alarm, secretCharacteristic]
        replica.services = [gap, battery, main]

        replica.security.pairingSeen = true
        replica.security.ioCapability = 0x03
        replica.security.bonding = true
        replica.security.mitm = false
        replica.security.secureConnections = true
        replica.security.encrypted = true

        typealias E = DeviceReplica.Event
        replica.conversation = [
            E(.connected(phone), time: 0.0),
            E(.read(handle: 17, offset: 0, value: longValue), time: 0.5),
            E(.subscribe(handle: 13, notify: true, indicate: false), time: 0.6),
            E(.write(handle: 11, value: [0x01, 0x02], withResponse: true), time: 0.7),
            E(.notification(handle: 13, value: [0x51, 0x60], indication: false), time: 0.75),
            E(.notification(handle: 13, value: [0x52], indication: false), time: 0.76),
            E(.write(handle: 11, value: [0x01, 0x03], withResponse: true), time: 0.8),
            E(.notification(handle: 13, value: [0x53], indication: false), time: 0.85),
            E(.write(handle: 11, value: [0xAA], withResponse: false), time: 0.9),
            E(.read(handle: 13, offset: 0, value: [0x01]), time: 1.0),
            E(.error(handle: 22, request: .readRequest, code: .insufficientAuthentication), time: 1.1),
            E(.subscribe(handle: 19, notify: false, indicate: true), time: 1.2),
            E(.notification(handle: 19, value: [0xA1], indication: true), time: 1.3),
            // A refused write: the write, then its refusal.
            E(.write(handle: 11, value: [0x0F], withResponse: true), time: 1.4),
            E(.error(handle: 11, request: .writeRequest, code: .writeNotPermitted), time: 1.4),
            E(.write(handle: 17, value: longWrite, withResponse: true), time: 1.5),
            E(.disconnected, time: 2.0),
            E(.connected(phone), time: 5.0, connection: 2),
            E(.read(handle: 6, offset: 0, value: [87]), time: 5.1, connection: 2),
            E(.subscribe(handle: 6, notify: true, indicate: false), time: 5.2, connection: 2),
            E(.notification(handle: 6, value: [86], indication: false), time: 5.3, connection: 2),
            E(.write(handle: 11, value: [0x01, 0x02], withResponse: true), time: 5.4, connection: 2),
            E(.notification(handle: 13, value: [0x51, 0x61], indication: false), time: 5.45, connection: 2),
            E(.disconnected, time: 6.0, connection: 2),
        ]
        return replica
    }
}
