import Bluetooth
import Capture

/// A phone's session with a Bluetooth LE keyboard (HID over GATT), written as HCI: the table a HOGP keyboard has —
/// three Report characteristics sharing the UUID 2A4D in the HID service, each with its Report Reference (2908), and
/// two Battery services (a split keyboard's halves) — discovered, every value and descriptor read, the input
/// Reports subscribed, then the host sets the LED output Report and the keyboard answers on the consumer input.
/// For the import's tests, the `capture` fuzz seeds and `gattemu-capturetool hid FILE` (for scripts/check-import).
public enum HIDSession {
    public static let keyboard = BluetoothAddress("C4:7C:8D:6A:21:0E")!

    /// One attribute of the table: a characteristic (value handle, properties, UUID, value, descriptors).
    public struct Characteristic: Sendable {
        public var declaration: UInt16
        public var properties: UInt8
        public var uuid: UInt16
        public var value: [UInt8]
        /// (handle, UUID, value); the client configuration has no value here (read as 00 00).
        public var descriptors: [(handle: UInt16, uuid: UInt16, value: [UInt8])] = []
        public var valueHandle: UInt16 { declaration + 1 }

        init(
            declaration: UInt16, properties: UInt8, uuid: UInt16, value: [UInt8],
            descriptors: [(handle: UInt16, uuid: UInt16, value: [UInt8])] = []
        ) {
            (self.declaration, self.properties, self.uuid, self.value, self.descriptors) = (
                declaration, properties, uuid, value, descriptors
            )
        }
    }

    public struct Service: Sendable {
        public var start: UInt16
        public var uuid: UInt16
        public var characteristics: [Characteristic]
        public var end: UInt16 { characteristics.last.map { $0.descriptors.last?.handle ?? $0.valueHandle } ?? start }
    }

    /// A keyboard + consumer-control report map with report ids 1 and 2 (HID Usage Tables' keyboard layout).
    public static let reportMap: [UInt8] = [
        0x05, 0x01, 0x09, 0x06, 0xA1, 0x01, 0x85, 0x01, 0x05, 0x07, 0x19, 0xE0, 0x29, 0xE7, 0x15, 0x00, 0x25, 0x01,
        0x75, 0x01, 0x95, 0x08, 0x81, 0x02, 0x95, 0x01, 0x75, 0x08, 0x81, 0x01, 0x95, 0x05, 0x75, 0x01, 0x05, 0x08,
        0x19, 0x01, 0x29, 0x05, 0x91, 0x02, 0x95, 0x01, 0x75, 0x03, 0x91, 0x01, 0x95, 0x06, 0x75, 0x08, 0x15, 0x00,
        0x25, 0x65, 0x05, 0x07, 0x19, 0x00, 0x29, 0x65, 0x81, 0x00, 0xC0,
        0x05, 0x0C, 0x09, 0x01, 0xA1, 0x01, 0x85, 0x02, 0x15, 0x00, 0x26, 0xFF, 0x03, 0x19, 0x00, 0x2A, 0xFF, 0x03,
        0x75, 0x10, 0x95, 0x01, 0x81, 0x00, 0xC0,
    ]

    public static let table: [Service] = [
        Service(
            start: 0x0001, uuid: 0x1800,
            characteristics: [
                Characteristic(declaration: 0x0002, properties: 0x02, uuid: 0x2A00, value: Array("Keys K380".utf8)),
                Characteristic(declaration: 0x0004, properties: 0x02, uuid: 0x2A01, value: [0xC1, 0x03]),
            ]),
        Service(
            start: 0x000A, uuid: 0x1812,
            characteristics: [
                Characteristic(declaration: 0x000B, properties: 0x06, uuid: 0x2A4E, value: [0x01]),
                Characteristic(
                    declaration: 0x000D, properties: 0x12, uuid: 0x2A4D, value: [0, 0, 0, 0, 0, 0, 0, 0],
                    descriptors: [(0x000F, 0x2902, []), (0x0010, 0x2908, [0x01, 0x01])]),
                Characteristic(
                    declaration: 0x0011, properties: 0x12, uuid: 0x2A4D, value: [0x00, 0x00],
                    descriptors: [(0x0013, 0x2902, []), (0x0014, 0x2908, [0x02, 0x01])]),
                Characteristic(
                    declaration: 0x0015, properties: 0x0E, uuid: 0x2A4D, value: [0x00],
                    descriptors: [(0x0017, 0x2908, [0x01, 0x02])]),
                Characteristic(declaration: 0x0018, properties: 0x02, uuid: 0x2A4B, value: reportMap),
                Characteristic(declaration: 0x001A, properties: 0x02, uuid: 0x2A4A, value: [0x11, 0x01, 0x00, 0x02]),
                Characteristic(declaration: 0x001C, properties: 0x04, uuid: 0x2A4C, value: []),
            ]),
        Service(
            start: 0x001E, uuid: 0x180F,
            characteristics: [
                Characteristic(
                    declaration: 0x001F, properties: 0x12, uuid: 0x2A19, value: [0x5A],
                    descriptors: [(0x0021, 0x2902, []), (0x0022, 0x2904, [0x04, 0x00, 0xAD, 0x27, 0x01, 0x01, 0x00])])
            ]),
        Service(
            start: 0x0023, uuid: 0x180F,
            characteristics: [
                Characteristic(
                    declaration: 0x0024, properties: 0x12, uuid: 0x2A19, value: [0x4B],
                    descriptors: [(0x0026, 0x2902, []), (0x0027, 0x2904, [0x04, 0x00, 0xAD, 0x27, 0x01, 0x02, 0x00])])
            ]),
        Service(
            start: 0x0028, uuid: 0x180A,
            characteristics: [
                Characteristic(declaration: 0x0029, properties: 0x02, uuid: 0x2A29, value: Array("Logi".utf8)),
                Characteristic(declaration: 0x002B, properties: 0x02, uuid: 0x2A50, value: [0x02, 0x6D, 0x04, 0x42, 0xB3, 0x00, 0x01]),
            ]),
    ]

    static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

    public static func script(handle: UInt16 = 0x40) -> CaptureScript {
        var s = CaptureScript()
        let advertising: [UInt8] = [2, 0x01, 0x05, 3, 0x19, 0xC1, 0x03, 3, 0x03, 0x12, 0x18, 10, 0x09] + Array("Keys K380".utf8)
        s.event(SyntheticHCI.legacyAdvertisingReports([(type: 0x00, addressType: 0, address: keyboard, data: advertising, rssi: -48)]))
        s.command(SyntheticHCI.leCreateConnection(peer: keyboard))
        s.event(SyntheticHCI.leConnectionComplete(handle: handle, role: 0, peer: keyboard))
        let phone = HCIDirection.hostToController
        let device = HCIDirection.controllerToHost
        s.att(handle: handle, .exchangeMTURequest, le16(517), from: phone)
        s.att(handle: handle, .exchangeMTUResponse, le16(185), from: device)
        // Services: every one in one response (6 bytes each), then "not found" past the last.
        s.att(handle: handle, .readByGroupTypeRequest, le16(1) + le16(0xFFFF) + [0x00, 0x28], from: phone)
        var groups: [UInt8] = [6]
        for service in table { groups += le16(service.start) + le16(service.end) + le16(service.uuid) }
        s.att(handle: handle, .readByGroupTypeResponse, groups, from: device)
        let last = table.last!.end + 1
        s.att(handle: handle, .readByGroupTypeRequest, le16(last) + le16(0xFFFF) + [0x00, 0x28], from: phone)
        s.att(handle: handle, .errorResponse, [0x10] + le16(last) + [0x0A], from: device)
        for service in table {
            // Characteristic declarations (7 bytes each), then "not found" past the service's last one.
            s.att(handle: handle, .readByTypeRequest, le16(service.start) + le16(service.end) + [0x03, 0x28], from: phone)
            var declarations: [UInt8] = [7]
            for characteristic in service.characteristics {
                declarations += le16(characteristic.declaration) + [characteristic.properties]
                declarations += le16(characteristic.valueHandle) + le16(characteristic.uuid)
            }
            s.att(handle: handle, .readByTypeResponse, declarations, from: device)
            let next = service.characteristics.last!.declaration + 1
            s.att(handle: handle, .readByTypeRequest, le16(next) + le16(service.end) + [0x03, 0x28], from: phone)
            s.att(handle: handle, .errorResponse, [0x08] + le16(next) + [0x0A], from: device)
            for characteristic in service.characteristics where !characteristic.descriptors.isEmpty {
                let first = characteristic.descriptors.first!.handle
                let end = characteristic.descriptors.last!.handle
                s.att(handle: handle, .findInformationRequest, le16(first) + le16(end), from: phone)
                var information: [UInt8] = [1]
                for descriptor in characteristic.descriptors { information += le16(descriptor.handle) + le16(descriptor.uuid) }
                s.att(handle: handle, .findInformationResponse, information, from: device)
            }
        }
        // Every value and descriptor read (the report map in one read: 90 bytes fit the MTU).
        for characteristic in table.flatMap(\.characteristics) {
            if characteristic.properties & 0x02 != 0 {
                s.att(handle: handle, .readRequest, le16(characteristic.valueHandle), from: phone)
                s.att(handle: handle, .readResponse, characteristic.value, from: device)
            }
            for descriptor in characteristic.descriptors where descriptor.uuid != 0x2902 {
                s.att(handle: handle, .readRequest, le16(descriptor.handle), from: phone)
                s.att(handle: handle, .readResponse, descriptor.value, from: device)
            }
        }
        // The host subscribes to both input Reports, sets Caps Lock on the output Report; the keyboard answers on
        // the consumer-control input Report (the second 2A4D), not the first.
        for configuration: UInt16 in [0x000F, 0x0013] {
            s.att(handle: handle, .writeRequest, le16(configuration) + [0x01, 0x00], from: phone)
            s.att(handle: handle, .writeResponse, [], from: device)
        }
        s.att(handle: handle, .writeRequest, le16(0x0016) + [0x02], from: phone)
        s.att(handle: handle, .writeResponse, [], from: device)
        s.time += 8_000
        s.att(handle: handle, .handleValueNotification, le16(0x0012) + [0xE9, 0x00], from: device)
        s.event(SyntheticHCI.disconnectionComplete(handle: handle))
        return s
    }
}
