import Bluetooth

/// A service of the GATT table, with its characteristics and their current values.
public struct ServiceInfo: Codable, Sendable, Equatable {
    public var id: String
    /// Lowercase 128-bit form.
    public var uuid: String
    /// The Bluetooth SIG name of a standard UUID.
    public var name: String?
    public var primary: Bool
    /// The ATT handle bluetoothd assigned; nil until it did.
    public var handle: Int?
    public var characteristics: [CharacteristicInfo]

    public init(id: String, uuid: String, name: String?, primary: Bool, handle: Int?, characteristics: [CharacteristicInfo]) {
        self.id = id
        self.uuid = uuid
        self.name = name
        self.primary = primary
        self.handle = handle
        self.characteristics = characteristics
    }

    static var schema: Schema {
        .object([
            required("id", .string),
            required("uuid", .string),
            optional("name", .string),
            required("primary", .boolean),
            optional("handle", .integer(minimum: 1, maximum: 0xFFFF)),
            required("characteristics", .array(CharacteristicInfo.schema)),
        ])
    }

    static var examples: [ServiceInfo] {
        [
            ServiceInfo(
                id: "battery", uuid: "0000180f-0000-1000-8000-00805f9b34fb", name: "Battery", primary: true, handle: 10,
                characteristics: [
                    CharacteristicInfo(
                        id: "level", uuid: "00002a19-0000-1000-8000-00805f9b34fb", name: "Battery Level", flags: ["read", "notify"],
                        handle: 11, value: "64", maxLength: 1,
                        descriptors: [
                            DescriptorInfo(
                                id: "desc", uuid: "00002901-0000-1000-8000-00805f9b34fb", name: "Characteristic User Description",
                                flags: ["read"], value: "4c6576656c")
                        ])
                ])
        ]
    }
}

/// A characteristic: flags and its stored value (what a read without a rule would answer).
public struct CharacteristicInfo: Codable, Sendable, Equatable {
    public var id: String
    public var uuid: String
    public var name: String?
    public var flags: [String]
    public var handle: Int?
    /// Hex, lowercase.
    public var value: String
    public var maxLength: Int
    public var descriptors: [DescriptorInfo]

    public init(
        id: String, uuid: String, name: String?, flags: [String], handle: Int?, value: String, maxLength: Int, descriptors: [DescriptorInfo]
    ) {
        self.id = id
        self.uuid = uuid
        self.name = name
        self.flags = flags
        self.handle = handle
        self.value = value
        self.maxLength = maxLength
        self.descriptors = descriptors
    }

    static var schema: Schema {
        .object([
            required("id", .string),
            required("uuid", .string),
            optional("name", .string),
            required("flags", .array(.string)),
            optional("handle", .integer(minimum: 1, maximum: 0xFFFF)),
            required("value", .described("hex", .string(pattern: "^([0-9a-f]{2})*$"))),
            required("maxLength", .integer(minimum: 0, maximum: UInt64(ATTMTU.maximumValueLength))),
            required("descriptors", .array(DescriptorInfo.schema)),
        ])
    }
}

/// A descriptor of a characteristic.
public struct DescriptorInfo: Codable, Sendable, Equatable {
    public var id: String?
    public var uuid: String
    public var name: String?
    public var flags: [String]
    public var value: String

    public init(id: String?, uuid: String, name: String?, flags: [String], value: String) {
        self.id = id
        self.uuid = uuid
        self.name = name
        self.flags = flags
        self.value = value
    }

    static var schema: Schema {
        .object([
            optional("id", .string),
            required("uuid", .string),
            optional("name", .string),
            required("flags", .array(.string)),
            required("value", .described("hex", .string(pattern: "^([0-9a-f]{2})*$"))),
        ])
    }
}
