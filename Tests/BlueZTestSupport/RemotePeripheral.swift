import DBus

/// A remote peripheral as a ``StandInAdapter`` shows it to a central: what bluetoothd makes of its
/// advertisement (`Device1`), how connecting to it goes, and its GATT table.
public struct RemotePeripheral: Sendable {
    public var address: String
    /// `public` or `random`.
    public var addressType = "public"
    public var name: String?
    /// Default: the name, else the address with dashes (as BlueZ makes one up).
    public var alias: String?
    public var appearance: UInt16?
    /// Advertised service UUIDs.
    public var uuids: [String] = []
    public var manufacturerData: [UInt16: [UInt8]] = [:]
    public var serviceData: [String: [UInt8]] = [:]
    public var txPower: Int16?
    public var rssi: Int16 = -60
    /// `AdvertisingFlags`; nil like BlueZ 5.66 without `-E` (experimental).
    public var advertisingFlags: [UInt8]?
    /// `AdvertisingData` (AD types BlueZ does not decode); nil like BlueZ 5.66 without `-E`.
    public var advertisingData: [UInt8: [UInt8]]?
    /// Other `Device1` properties, or odd values for the ones above (a hostile bluetoothd).
    public var extraProperties: [String: DBusValue] = [:]
    /// Heard this long after discovery starts.
    public var advertisesAfter: Duration = .zero
    /// Known before discovery: exported at once with these properties instead (stale data from an earlier scan).
    public var cached = false
    public var staleProperties: [String: DBusValue] = [:]
    public var paired = false

    /// How `Connect` goes.
    public enum Connecting: Sendable, Equatable {
        case succeeds
        /// Every attempt fails with this D-Bus error.
        case fails(name: String, message: String)
        /// The first `count` attempts fail (`le-connection-abort-by-local`), then it succeeds.
        case failsFirst(Int)
        /// Connected, but the services are never resolved.
        case neverResolves
        /// Connected at once (as `Get` says), but the signals saying so, with the services resolved, come this much
        /// later: a loaded bluetoothd (or bus) late with its `PropertiesChanged`.
        case announcesLate(Duration)
    }

    public var connecting = Connecting.succeeds
    /// The device drops the link this long after connecting.
    public var disconnectsAfter: Duration?
    public var services: [RemoteService] = []

    public init(address: String, name: String? = nil) {
        self.address = address
        self.name = name
    }

    /// `Device1`'s properties while advertising (`rssi`: with an RSSI, as during discovery).
    func properties(adapter: DBusObjectPath, rssi: Bool) -> [String: DBusValue] {
        var properties: [String: DBusValue] = [
            "Address": .string(address), "AddressType": .string(addressType),
            "Alias": .string(alias ?? name ?? address.replacing(":", with: "-")),
            "Adapter": .objectPath(adapter), "Paired": .boolean(paired), "Bonded": .boolean(paired), "Trusted": .boolean(false),
            "Blocked": .boolean(false), "LegacyPairing": .boolean(false), "Connected": .boolean(false),
            "ServicesResolved": .boolean(false), "UUIDs": .strings(uuids),
        ]
        if let name { properties["Name"] = .string(name) }
        if let appearance { properties["Appearance"] = .uint16(appearance) }
        if !manufacturerData.isEmpty {
            properties["ManufacturerData"] = .variantBytesDictionary(manufacturerData, key: .uint16, DBusValue.uint16)
        }
        if !serviceData.isEmpty {
            properties["ServiceData"] = .variantBytesDictionary(serviceData, key: .string, DBusValue.string)
        }
        if rssi {
            properties["RSSI"] = .int16(self.rssi)
            if let txPower { properties["TxPower"] = .int16(txPower) }
        }
        if let advertisingFlags { properties["AdvertisingFlags"] = .bytes(advertisingFlags) }
        if let advertisingData {
            properties["AdvertisingData"] = .variantBytesDictionary(advertisingData, key: .byte, DBusValue.byte)
        }
        properties.merge(extraProperties) { $1 }
        return properties
    }
}

/// A primary or secondary service of a ``RemotePeripheral``; handles as the device has them.
public struct RemoteService: Sendable {
    public var uuid: String
    public var primary = true
    /// The service declaration's handle.
    public var handle: UInt16
    /// Handles of included services.
    public var includes: [UInt16] = []
    public var characteristics: [RemoteCharacteristic] = []

    public init(uuid: String, primary: Bool = true, handle: UInt16, includes: [UInt16] = [], characteristics: [RemoteCharacteristic] = []) {
        self.uuid = uuid
        self.primary = primary
        self.handle = handle
        self.includes = includes
        self.characteristics = characteristics
    }
}

/// A characteristic of a ``RemoteService``.
public struct RemoteCharacteristic: Sendable {
    public var uuid: String
    /// BlueZ's client flags (`read`, `notify`, …).
    public var flags: [String]
    /// The declaration's handle (the value is at the next one).
    public var handle: UInt16
    public var value: [UInt8] = []
    /// `ReadValue` fails with this.
    public var readError: DBusError?
    /// Reading it makes bluetoothd pair first (the device asked for encryption): `Paired` turns true, then the
    /// value is returned.
    public var pairsOnRead = false
    /// What reading it does to the link.
    public enum ReadEffect: Sendable, Equatable {
        case none
        /// The device drops the link: the read fails with `Not connected`.
        case disconnects
        /// bluetoothd removes the device object (`InterfacesRemoved`): the read fails likewise.
        case vanishes
        /// The device asked for encryption: bluetoothd pairs with it (`Paired` turns true), but the first read's
        /// answer never comes (the caller's call times out, as with a loaded bluetoothd whose pairing outlasted
        /// the call); later reads answer the value.
        case pairsWithoutAnswer
        /// bluetoothd's ATT bearer to the device goes while the link stays up, on the first `times` connections:
        /// this read fails with "Operation failed with ATT error: 0x0e" (what att.c gives a request pending on a
        /// bearer that closed) and every read after it with "Not connected", `Connected` still true, until the link
        /// is dropped. On later connections the read is answered.
        case losesTheBearer(times: Int)
    }

    public var onRead = ReadEffect.none
    /// The first write while the device is not paired fails at once with `Failed` "Operation failed with ATT error:
    /// 0x0e", and the pairing bluetoothd began ends 200 ms later (`Paired` turns true): what bluetoothd 5.78 and later
    /// answer when the request it repeats after pairing is written before the link is secured (att.c fails the
    /// request without a PDU, and gatt-client.c's `process_error` makes that Unlikely Error; docs/relay.md). Later
    /// writes are stored.
    public var pairsAfterFailingWrite = false
    /// `StartNotify` and `AcquireNotify` fail with this.
    public var subscribeError: DBusError?
    /// Whether `AcquireNotify` is offered (else it answers `NotSupported`).
    public var acquirable = true
    /// What the device sends once subscribed: after each delay (from the subscription), one value; those
    /// after zero before the subscription is answered.
    public var notifications: [(after: Duration, value: [UInt8])] = []
    /// A device that answers writes: each value written here is notified on the characteristic with this handle,
    /// `prefix` first, and only then is the `WriteValue` call answered (`replyAfter` later), as a fast device's
    /// notification can reach the central before bluetoothd's reply to the write.
    public var answersWrites: (handle: UInt16, prefix: [UInt8], replyAfter: Duration)?
    public var descriptors: [RemoteDescriptor] = []

    public init(uuid: String, flags: [String], handle: UInt16, value: [UInt8] = [], descriptors: [RemoteDescriptor] = []) {
        self.uuid = uuid
        self.flags = flags
        self.handle = handle
        self.value = value
        self.descriptors = descriptors
    }

    var canNotify: Bool { flags.contains("notify") || flags.contains("indicate") }
}

/// A descriptor of a ``RemoteCharacteristic``.
public struct RemoteDescriptor: Sendable {
    public var uuid: String
    public var handle: UInt16
    public var value: [UInt8] = []
    public var readError: DBusError?

    public init(uuid: String, handle: UInt16, value: [UInt8] = [], readError: DBusError? = nil) {
        self.uuid = uuid
        self.handle = handle
        self.value = value
        self.readError = readError
    }
}
