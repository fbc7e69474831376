/// The type byte of an AD structure (Bluetooth Assigned Numbers, "Common Data Types").
public struct ADType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let flags = ADType(rawValue: 0x01)
    public static let incompleteServiceUUIDs16 = ADType(rawValue: 0x02)
    public static let completeServiceUUIDs16 = ADType(rawValue: 0x03)
    public static let incompleteServiceUUIDs32 = ADType(rawValue: 0x04)
    public static let completeServiceUUIDs32 = ADType(rawValue: 0x05)
    public static let incompleteServiceUUIDs128 = ADType(rawValue: 0x06)
    public static let completeServiceUUIDs128 = ADType(rawValue: 0x07)
    public static let shortenedLocalName = ADType(rawValue: 0x08)
    public static let completeLocalName = ADType(rawValue: 0x09)
    public static let txPowerLevel = ADType(rawValue: 0x0A)
    public static let peripheralConnectionIntervalRange = ADType(rawValue: 0x12)
    public static let solicitedServiceUUIDs16 = ADType(rawValue: 0x14)
    public static let solicitedServiceUUIDs128 = ADType(rawValue: 0x15)
    public static let serviceData16 = ADType(rawValue: 0x16)
    public static let appearance = ADType(rawValue: 0x19)
    public static let advertisingInterval = ADType(rawValue: 0x1A)
    public static let solicitedServiceUUIDs32 = ADType(rawValue: 0x1F)
    public static let serviceData32 = ADType(rawValue: 0x20)
    public static let serviceData128 = ADType(rawValue: 0x21)
    public static let manufacturerData = ADType(rawValue: 0xFF)

    private static let names: [UInt8: String] = [
        0x01: "flags", 0x02: "incomplete 16-bit service UUIDs", 0x03: "complete 16-bit service UUIDs",
        0x04: "incomplete 32-bit service UUIDs", 0x05: "complete 32-bit service UUIDs",
        0x06: "incomplete 128-bit service UUIDs", 0x07: "complete 128-bit service UUIDs", 0x08: "shortened local name",
        0x09: "complete local name", 0x0A: "TX power level", 0x0D: "class of device", 0x0E: "simple pairing hash C-192",
        0x0F: "simple pairing randomizer R-192", 0x10: "security manager TK value", 0x11: "security manager OOB flags",
        0x12: "peripheral connection interval range", 0x14: "16-bit solicited service UUIDs",
        0x15: "128-bit solicited service UUIDs", 0x16: "16-bit service data", 0x17: "public target address",
        0x18: "random target address", 0x19: "appearance", 0x1A: "advertising interval",
        0x1B: "LE Bluetooth device address", 0x1C: "LE role", 0x1D: "simple pairing hash C-256",
        0x1E: "simple pairing randomizer R-256", 0x1F: "32-bit solicited service UUIDs", 0x20: "32-bit service data",
        0x21: "128-bit service data", 0x22: "LE secure connections confirmation value",
        0x23: "LE secure connections random value", 0x24: "URI", 0x27: "LE supported features",
        0x28: "channel map update indication", 0x29: "PB-ADV", 0x2A: "mesh message", 0x2B: "mesh beacon",
        0x3D: "3D information data", 0xFF: "manufacturer data",
    ]

    public var description: String { Self.names[rawValue] ?? "AD type 0x" + HexDigits.pair(rawValue) }
}

/// One AD structure: a type and its data (the length byte is implied).
public struct ADStructure: Sendable, Hashable {
    public var type: ADType
    public var data: [UInt8]

    public init(type: ADType, data: [UInt8]) {
        self.type = type
        self.data = data
    }

    /// Bytes it takes in an advertisement: length, type and data.
    public var encodedLength: Int { 2 + data.count }
}

/// Advertising data or a scan response: a sequence of AD structures, parsed and built byte-exactly.
public struct AdvertisingData: Sendable, Hashable {
    /// What legacy advertising data and scan responses can hold each.
    public static let legacyLimit = 31
    /// What an extended advertising set's data (or scan response) holds at most through HCI: 251 bytes.
    public static let extendedLimit = 251

    public var structures: [ADStructure]

    public init(_ structures: [ADStructure] = []) { self.structures = structures }

    /// Where parsing stopped early: the byte offset and why. The structures before it are kept.
    public struct ParseProblem: Sendable, Hashable, CustomStringConvertible {
        public var offset: Int
        public var reason: String
        public var description: String { "AD structure at byte \(offset): \(reason)" }

        public init(offset: Int, reason: String) {
            self.offset = offset
            self.reason = reason
        }
    }

    /// Parses `bytes`; a zero length byte ends the data (the rest is padding). A structure running past the
    /// end stops parsing with a ``ParseProblem``; what came before is kept. Inlinable so callers in other modules get it specialized for their collection (decoding a capture
    /// parses tens of thousands of reports).
    @inlinable
    public static func parse<Bytes: Collection>(_ bytes: Bytes) -> (data: AdvertisingData, problem: ParseProblem?)
    where Bytes.Element == UInt8, Bytes.Index == Int {
        var structures: [ADStructure] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let length = Int(bytes[index])
            if length == 0 { break }
            let end = index + 1 + length
            guard end <= bytes.endIndex else {
                let offset = index - bytes.startIndex
                return (
                    AdvertisingData(structures),
                    ParseProblem(offset: offset, reason: "length \(length) runs past the end (\(bytes.endIndex - index - 1) bytes left)")
                )
            }
            structures.append(ADStructure(type: ADType(rawValue: bytes[index + 1]), data: Array(bytes[(index + 2)..<end])))
            index = end
        }
        return (AdvertisingData(structures), nil)
    }

    /// The bytes: each structure as length, type, data.
    public var bytes: [UInt8] {
        var bytes: [UInt8] = []
        for structure in structures {
            bytes.append(UInt8(truncatingIfNeeded: structure.data.count + 1))
            bytes.append(structure.type.rawValue)
            bytes += structure.data
        }
        return bytes
    }

    public var encodedLength: Int { structures.reduce(0) { $0 + $1.encodedLength } }

    /// Whether it fits legacy advertising (31 bytes).
    public var fitsLegacy: Bool { encodedLength <= Self.legacyLimit }

    /// The data of every structure of `type`, in order.
    public func all(_ type: ADType) -> [[UInt8]] { structures.filter { $0.type == type }.map(\.data) }

    public func first(_ type: ADType) -> [UInt8]? { structures.first { $0.type == type }?.data }

    // MARK: Decoded fields

    public var flags: UInt8? { first(.flags)?.first }

    /// The complete local name, else the shortened one (UTF-8, invalid sequences replaced).
    public var localName: String? {
        (first(.completeLocalName) ?? first(.shortenedLocalName)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Whether ``localName`` is the complete name.
    public var hasCompleteLocalName: Bool { first(.completeLocalName) != nil }

    /// `name` as a legacy scan response carries it: the whole name when its UTF-8 fits the 29 bytes left after
    /// the AD structure's length and type, else shortened to the whole characters from its start that do (a
    /// GAP Device Name can have 248 bytes; a device advertises it shortened).
    public static func scanResponseName(_ name: String) -> String {
        let room = legacyLimit - 2
        guard name.utf8.count > room else { return name }
        var end = name.startIndex
        var bytes = 0
        for index in name.indices {
            let next = name.index(after: index)
            bytes += name.utf8.distance(from: index, to: next)
            if bytes > room { break }
            end = next
        }
        return String(name[..<end])
    }

    /// Service UUIDs of every size, complete and incomplete lists alike, in order.
    public var serviceUUIDs: [BluetoothUUID] {
        uuids([
            (.incompleteServiceUUIDs16, 2), (.completeServiceUUIDs16, 2), (.incompleteServiceUUIDs32, 4),
            (.completeServiceUUIDs32, 4), (.incompleteServiceUUIDs128, 16), (.completeServiceUUIDs128, 16),
        ])
    }

    public var solicitedServiceUUIDs: [BluetoothUUID] {
        uuids([(.solicitedServiceUUIDs16, 2), (.solicitedServiceUUIDs32, 4), (.solicitedServiceUUIDs128, 16)])
    }

    /// Manufacturer data: company identifier (little-endian on air) and the bytes after it.
    public var manufacturerData: [(company: UInt16, data: [UInt8])] {
        all(.manufacturerData).compactMap { data in
            guard data.count >= 2 else { return nil }
            return (UInt16(data[0]) | UInt16(data[1]) << 8, Array(data[2...]))
        }
    }

    /// Service data: service UUID and the bytes after it.
    public var serviceData: [(uuid: BluetoothUUID, data: [UInt8])] {
        [(ADType.serviceData16, 2), (.serviceData32, 4), (.serviceData128, 16)].flatMap { type, size in
            all(type).compactMap { data -> (BluetoothUUID, [UInt8])? in
                guard data.count >= size, let uuid = BluetoothUUID(littleEndian: data[0..<size]) else { return nil }
                return (uuid, Array(data[size...]))
            }
        }
    }

    public var appearance: UInt16? {
        guard let data = first(.appearance), data.count == 2 else { return nil }
        return UInt16(data[0]) | UInt16(data[1]) << 8
    }

    /// TX power level in dBm.
    public var txPower: Int8? { first(.txPowerLevel).flatMap(\.first).map { Int8(bitPattern: $0) } }

    /// AD types the decoded fields above cover (flags, UUID lists, names, TX power, solicitations, service
    /// data, appearance, manufacturer data): the ones BlueZ builds from its own advertisement properties.
    public static let typesOfDecodedFields: Set<UInt8> = [
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x14, 0x15, 0x16, 0x19, 0x1F, 0x20, 0x21, 0xFF,
    ]

    /// AD types bluetoothd refuses in an advertisement's `Data` property (`type_reject_list` in BlueZ's
    /// `src/shared/ad.c`, the same in 5.66 and 5.82): those its other properties build (above) and those about
    /// the link, pairing or mesh (class of device, OOB values, connection interval, addresses, role, features).
    /// One of them in `Data` makes bluetoothd refuse the whole advertisement ("Failed to parse advertisement").
    public static let typesBlueZRefusesInData: Set<UInt8> = typesOfDecodedFields.union([
        0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x17, 0x18, 0x1A, 0x1B, 0x1C, 0x1D, 0x1E, 0x22, 0x23, 0x27, 0x28, 0x29,
        0x2A, 0x2B, 0x3D,
    ])

    /// The structures none of the decoded fields above covers.
    public var otherStructures: [ADStructure] {
        structures.filter { !Self.typesOfDecodedFields.contains($0.type.rawValue) }
    }

    private func uuids(_ kinds: [(ADType, Int)]) -> [BluetoothUUID] {
        var result: [BluetoothUUID] = []
        for structure in structures {
            guard let size = kinds.first(where: { $0.0 == structure.type })?.1 else { continue }
            var index = 0
            while index + size <= structure.data.count {
                if let uuid = BluetoothUUID(littleEndian: structure.data[index..<(index + size)]), !result.contains(uuid) {
                    result.append(uuid)
                }
                index += size
            }
        }
        return result
    }
}
