import Bluetooth

/// How many bytes an advertisement takes in the legacy advertising data and scan response (31 each).
///
/// Mirrors what BlueZ 5.66 and the kernel build: flags (3 bytes) in the advertising data, the local name
/// alone in the scan response, everything else in the advertising data. Nothing is truncated silently:
/// ``fits`` is false when either part is over its limit.
public struct AdvertisementBudget: Sendable, Equatable, CustomStringConvertible {
    /// One field and the bytes it takes, AD headers included.
    public struct Item: Sendable, Equatable {
        public var field: String
        public var bytes: Int
    }

    public static let legacyLimit = 31

    public var advertisingData: [Item] = []
    public var scanResponse: [Item] = []

    public var advertisingDataBytes: Int { advertisingData.reduce(0) { $0 + $1.bytes } }
    public var scanResponseBytes: Int { scanResponse.reduce(0) { $0 + $1.bytes } }
    public var fits: Bool { advertisingDataBytes <= Self.legacyLimit && scanResponseBytes <= Self.legacyLimit }

    public init(_ advertisement: Advertisement) {
        advertisingData.append(Item(field: "flags", bytes: 3))
        addUUIDs(advertisement.serviceUUIDs, field: "serviceUUIDs")
        addUUIDs(advertisement.solicitUUIDs, field: "solicitUUIDs")
        for (company, bytes) in advertisement.manufacturerData.sorted(by: { $0.key < $1.key }) {
            advertisingData.append(Item(field: "manufacturerData[\(company.hexLiteral(digits: 4))]", bytes: 2 + 2 + bytes.count))
        }
        for (uuid, bytes) in advertisement.serviceData.sorted(by: { $0.key < $1.key }) {
            advertisingData.append(Item(field: "serviceData[\(uuid)]", bytes: 2 + uuid.advertisedSize + bytes.count))
        }
        if advertisement.appearance != nil || advertisement.includes.contains("appearance") {
            advertisingData.append(Item(field: "appearance", bytes: 4))
        }
        if advertisement.includes.contains("tx-power") {
            advertisingData.append(Item(field: "includes tx-power", bytes: 3))
        }
        for (type, bytes) in advertisement.data.sorted(by: { $0.key < $1.key }) {
            advertisingData.append(Item(field: "data[\(type.hexLiteral(digits: 2))]", bytes: 2 + bytes.count))
        }
        if let name = advertisement.localName {
            scanResponse.append(Item(field: "localName", bytes: 2 + name.utf8.count))
        }
    }

    private mutating func addUUIDs(_ uuids: [BluetoothUUID], field: String) {
        let sizes = Dictionary(grouping: uuids, by: \.advertisedSize)
        for size in sizes.keys.sorted() {
            let count = sizes[size]?.count ?? 0
            advertisingData.append(Item(field: "\(field) (\(count) × \(size * 8)-bit)", bytes: 2 + size * count))
        }
    }

    public var description: String {
        func list(_ items: [Item]) -> String { items.map { "\($0.field) \($0.bytes)" }.joined(separator: ", ") }
        var parts: [String] = []
        if advertisingDataBytes > Self.legacyLimit {
            parts.append("advertising data needs \(advertisingDataBytes) of \(Self.legacyLimit) bytes (\(list(advertisingData)))")
        }
        if scanResponseBytes > Self.legacyLimit {
            parts.append("scan response needs \(scanResponseBytes) of \(Self.legacyLimit) bytes (\(list(scanResponse)))")
        }
        if parts.isEmpty {
            return
                "advertising data \(advertisingDataBytes)/\(Self.legacyLimit) bytes, scan response \(scanResponseBytes)/\(Self.legacyLimit) bytes"
        }
        return "advertisement does not fit: " + parts.joined(separator: "; ")
    }
}
