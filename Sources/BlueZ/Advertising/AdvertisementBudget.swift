import Bluetooth

/// How many bytes an advertisement takes in its advertising data and scan response, against the limits.
///
/// Legacy advertising carries 31 bytes in each; an extended one (a secondary channel) up to the adapter's
/// `MaxAdvLen` and `MaxScnRspLen` (251 on Bluetooth 5 controllers). The parts are ``AdvertisementLayout``'s.
/// Nothing is truncated silently: ``fits`` is false when either part is over its limit, or when a connectable
/// extended advertisement has scan response fields (it has no scan response to carry them).
public struct AdvertisementBudget: Sendable, Equatable, CustomStringConvertible {
    /// What the advertising data and the scan response may hold.
    public struct Limits: Sendable, Equatable {
        public var advertisingData: Int
        public var scanResponse: Int

        public init(advertisingData: Int, scanResponse: Int) {
            self.advertisingData = advertisingData
            self.scanResponse = scanResponse
        }

        /// Legacy advertising PDUs: 31 bytes each.
        public static let legacy = Limits(advertisingData: AdvertisingData.legacyLimit, scanResponse: AdvertisingData.legacyLimit)
        /// The most an extended advertising set holds through the kernel (HCI's 251 bytes per part).
        public static let extendedMaximum = Limits(
            advertisingData: AdvertisingData.extendedLimit, scanResponse: AdvertisingData.extendedLimit)
    }

    /// The most bytes of an extended set's advertising data (without the flags, which the kernel adds) and scan
    /// response together that bluetoothd before 5.87 can hand the kernel: it sizes its MGMT_OP_ADD_EXT_ADV_DATA
    /// command as a legacy one's, 8 bytes too many, in an 8-bit sum that overflows above this (fixed by bluez
    /// 2a6968b40, "advertising: Fix sending extra bytes with MGMT_OP_ADD_EXT_ADV_DATA").
    public static let oldBluetoothdExtendedLimit = 244

    /// What bluetoothd hands the kernel of an extended set: advertising data without the flags, and scan response.
    public var bluetoothdExtendedBytes: Int { max(0, advertisingDataBytes - 3) + scanResponseBytes }

    public var layout: AdvertisementLayout
    public var limits: Limits
    /// Scan response fields of a connectable extended advertisement (bluetoothd drops them).
    public var droppedScanResponse: [String]

    public var advertisingData: [AdvertisementLayout.Item] { layout.advertisingData }
    public var scanResponse: [AdvertisementLayout.Item] { layout.scanResponse }
    public var advertisingDataBytes: Int { advertisingData.reduce(0) { $0 + $1.bytes } }
    public var scanResponseBytes: Int { layout.hasScanResponse ? scanResponse.reduce(0) { $0 + $1.bytes } : 0 }
    public var fits: Bool {
        advertisingDataBytes <= limits.advertisingData && scanResponseBytes <= limits.scanResponse && droppedScanResponse.isEmpty
    }

    /// The budget under `limits`; nil: legacy limits for a legacy advertisement, ``Limits/extendedMaximum`` for an
    /// extended one (an adapter's own limits are checked when gattemu starts on it).
    public init(_ advertisement: Advertisement, limits: Limits? = nil) {
        layout = AdvertisementLayout(advertisement)
        self.limits = limits ?? (advertisement.isExtended ? .extendedMaximum : .legacy)
        droppedScanResponse = layout.hasScanResponse ? [] : layout.scanResponse.map(\.field)
    }

    public var description: String {
        func list(_ items: [AdvertisementLayout.Item]) -> String { items.map { "\($0.field) \($0.bytes)" }.joined(separator: ", ") }
        var parts: [String] = []
        if advertisingDataBytes > limits.advertisingData {
            parts.append("advertising data needs \(advertisingDataBytes) of \(limits.advertisingData) bytes (\(list(advertisingData)))")
        }
        if scanResponseBytes > limits.scanResponse {
            parts.append("scan response needs \(scanResponseBytes) of \(limits.scanResponse) bytes (\(list(scanResponse)))")
        }
        if !droppedScanResponse.isEmpty {
            parts.append(
                "a connectable extended advertisement has no scan response (bluetoothd sends the name in the advertising data), "
                    + "so \(droppedScanResponse.joined(separator: ", ")) would never be sent")
        }
        if parts.isEmpty {
            let scan = layout.hasScanResponse ? "scan response \(scanResponseBytes)/\(limits.scanResponse) bytes" : "no scan response"
            return "advertising data \(advertisingDataBytes)/\(limits.advertisingData) bytes, \(scan)"
        }
        return "advertisement does not fit: " + parts.joined(separator: "; ")
    }
}
