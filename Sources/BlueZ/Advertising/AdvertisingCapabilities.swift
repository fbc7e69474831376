import DBus

/// What an adapter's `org.bluez.LEAdvertisingManager1` says it can advertise.
public struct AdvertisingCapabilities: Sendable, Equatable {
    /// Advertising instances still free; nil: the adapter cannot advertise (no LEAdvertisingManager1).
    public var supportedInstances: Int?
    public var activeInstances: Int?
    /// What `Includes` may name (`tx-power`, `appearance`, `local-name`, …).
    public var supportedIncludes: [String] = []
    /// The secondary channels an extended advertisement may use (`1M`, `2M`, `Coded`); empty: the controller has no
    /// extended advertising (bluetoothd leaves the property out).
    public var secondaryChannels: [String] = []
    /// `SupportedFeatures`: `CanSetTxPower`, `HardwareOffload`.
    public var features: [String] = []
    /// `SupportedCapabilities`: the most bytes of advertising data and of scan response, the TX power range (dBm).
    public var maxAdvertisingDataLength: Int?
    public var maxScanResponseLength: Int?
    public var minTxPower: Int?
    public var maxTxPower: Int?

    public init() {}

    /// From the manager's properties (nil: the adapter has no LEAdvertisingManager1).
    public init(_ properties: [String: DBusValue]?) {
        func strings(_ name: String) -> [String] { properties?[name]?.arrayElements?.compactMap(\.string) ?? [] }
        supportedInstances = properties?["SupportedInstances"]?.integer.map(Int.init)
        activeInstances = properties?["ActiveInstances"]?.integer.map(Int.init)
        supportedIncludes = strings("SupportedIncludes")
        secondaryChannels = strings("SupportedSecondaryChannels")
        features = strings("SupportedFeatures")
        let capabilities = properties?["SupportedCapabilities"]?.stringKeyedDictionary
        func capability(_ key: String) -> Int? { capabilities?[key]?.integer.map(Int.init) }
        maxAdvertisingDataLength = capability("MaxAdvLen")
        maxScanResponseLength = capability("MaxScnRspLen")
        minTxPower = capability("MinTxPower")
        maxTxPower = capability("MaxTxPower")
    }

    /// Whether bluetoothd applies an advertisement's `TxPower` (it ignores it otherwise).
    public var canSetTxPower: Bool { features.contains("CanSetTxPower") }

    /// The byte limits `advertisement` is held to: 31 and 31 for legacy advertising; for extended advertising what
    /// bluetoothd reports (`MaxAdvLen`, `MaxScnRspLen`), the HCI maximum when it reports none.
    public func limits(for advertisement: Advertisement) -> AdvertisementBudget.Limits {
        guard advertisement.isExtended else { return .legacy }
        return AdvertisementBudget.Limits(
            advertisingData: maxAdvertisingDataLength ?? AdvertisementBudget.Limits.extendedMaximum.advertisingData,
            scanResponse: maxScanResponseLength ?? AdvertisementBudget.Limits.extendedMaximum.scanResponse)
    }
}
