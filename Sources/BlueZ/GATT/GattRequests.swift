import Bluetooth
import DBus

/// Where a GATT request came from: the central and its link, as bluetoothd's options said (read once, by
/// ``GattRequestOptions``).
public struct GattRequestContext: Sendable, Equatable {
    /// The central's `org.bluez.Device1` object, when BlueZ names one below the adapter.
    public var device: DBusObjectPath?
    /// The central's address, from that device object.
    public var central: BluetoothAddress?
    /// The negotiated ATT MTU, when BlueZ gives it.
    public var mtu: ATTMTU?
    /// The link's transport, when BlueZ gives it.
    public var link: LinkType?

    /// The D-Bus call that carried the request, if any (see ``begin()``).
    let call: DBusMethodCall?

    init(options: GattRequestOptions, call: DBusMethodCall? = nil) {
        device = options.device
        central = options.central
        mtu = options.mtu
        link = options.link
        self.call = call
    }

    /// A request context as a test or a stand-in describes it.
    public init(central: BluetoothAddress? = nil, mtu: ATTMTU? = nil, link: LinkType? = nil, device: DBusObjectPath? = nil) {
        self.device = device
        self.central = central
        self.mtu = mtu
        self.link = link
        call = nil
    }

    /// Lets bluetoothd's next call start before this request is answered. Requests reach the handler in
    /// the order bluetoothd sent them; each waits until the one before has begun or been answered, so a
    /// handler calls this once it has taken note of the request (before waiting out a delay).
    public func begin() { call?.begin() }

    /// Equal when they describe the same central and link; the carrying call does not count.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.device == rhs.device && lhs.central == rhs.central && lhs.mtu == rhs.mtu && lhs.link == rhs.link
    }
}

/// The `a{sv}` options bluetoothd passes with a GATT call (`ReadValue`, `WriteValue`, `AcquireNotify`), typed
/// once where they enter: the central (from the device object, only below the adapter), the link, the MTU, the
/// offset, the write type, the prepare-authorize step. Read in one pass over the entries (this runs for every read
/// and write: no dictionary is built); unknown keys and mistyped values are ignored.
///
/// Numbers are checked here: an offset outside 0…``ATTMTU/maximumValueLength`` makes ``problem`` say so (the
/// call is refused with `InvalidOffset`), an MTU outside ``ATTMTU/valid`` is taken as not given.
public struct GattRequestOptions: Sendable, Equatable {
    public var device: DBusObjectPath?
    public var central: BluetoothAddress?
    public var mtu: ATTMTU?
    public var link: LinkType?
    /// Always within 0…``ATTMTU/maximumValueLength`` (0 when the caller's was not: see ``problem``).
    public var offset = 0
    /// BlueZ's `type` (`request`, `command`, `reliable`), from BlueZ versions that say.
    public var writeType: GattWriteRequest.Kind?
    /// The authorization step of a prepared write: no value is stored.
    public var prepareAuthorize = false
    /// Why the call must be refused before it reaches the handler, if it must.
    public var problem: ATTError?

    /// The longest attribute value ATT allows, and so the largest meaningful offset.
    static let maximumValueLength = ATTMTU.maximumValueLength
    /// The ATT MTUs a link can have (Core spec: LE minimum 23; BlueZ's maximum 517).
    static let validMTUs: ClosedRange<UInt16> = 23...517

    public init() {}

    /// Reads the current argument of `reader` (the call's options dictionary); a `device` outside `adapter`
    /// names no central.
    public init(reading reader: inout DBusArgumentReader, adapter: DBusObjectPath) {
        reader.forEachEntry { key, value in
            switch key {
            case "device":
                let path = value.objectPath()
                central = path.flatMap { BlueZDevicePath.address(of: $0, on: adapter) }
                device = central == nil ? nil : path
            case "mtu": mtu = value.integer().flatMap(ATTMTU.init(exactly:))
            case "link": link = value.string().flatMap(LinkType.init(rawValue:))
            case "offset":
                if let given = value.integer(), (0...Int64(ATTMTU.maximumValueLength)).contains(given) {
                    offset = Int(given)
                } else {
                    problem = .invalidOffset
                }
            case "type": writeType = value.string().flatMap(GattWriteRequest.Kind.init(rawValue:))
            case "prepare-authorize": prepareAuthorize = value.boolean() ?? false
            default: break
            }
        }
    }

    /// The options of a call whose only argument they are (`ReadValue`, `AcquireNotify`).
    init(of call: DBusMethodCall, adapter: DBusObjectPath) {
        self = call.readArguments { GattRequestOptions(reading: &$0, adapter: adapter) }
    }

    /// `ReadValue(a{sv})`'s argument, or the error the call is refused with.
    public static func read(_ reader: inout DBusArgumentReader, adapter: DBusObjectPath) -> Result<GattRequestOptions, ATTError> {
        let options = GattRequestOptions(reading: &reader, adapter: adapter)
        return options.problem.map { .failure($0) } ?? .success(options)
    }

    /// `WriteValue(ay, a{sv})`'s arguments, or the error the call is refused with: no central can write more
    /// than an attribute holds (only a stranger on the bus would try).
    public static func write(
        _ reader: inout DBusArgumentReader, adapter: DBusObjectPath
    ) -> Result<(value: [UInt8], options: GattRequestOptions), ATTError> {
        let value = reader.bytes() ?? []
        let options = GattRequestOptions(reading: &reader, adapter: adapter)
        if let problem = options.problem { return .failure(problem) }
        guard options.offset + value.count <= ATTMTU.maximumValueLength else { return .failure(.invalidValueLength) }
        return .success((value, options))
    }
}

/// The decoding of GATT calls, for the fuzz target: what the handlers do with a call's arguments.
@_spi(Fuzzing) public enum GattCallDecoding {
    /// Decodes the arguments as `ReadValue` and as `WriteValue` would; traps if a number that passes escapes
    /// the range the handlers rely on.
    public static func check(_ reader: inout DBusArgumentReader, asWrite: Bool) {
        let adapter: DBusObjectPath = "/org/bluez/hci0"
        if asWrite {
            guard case .success(let (value, options)) = GattRequestOptions.write(&reader, adapter: adapter) else { return }
            precondition((0...ATTMTU.maximumValueLength).contains(options.offset + value.count))
            check(options, adapter: adapter)
        } else {
            guard case .success(let options) = GattRequestOptions.read(&reader, adapter: adapter) else { return }
            check(options, adapter: adapter)
        }
    }

    private static func check(_ options: GattRequestOptions, adapter: DBusObjectPath) {
        precondition((0...ATTMTU.maximumValueLength).contains(options.offset))
        precondition(options.mtu.map { ATTMTU.valid.contains($0.rawValue) } ?? true)
        precondition((options.device == nil) == (options.central == nil))
        precondition(options.device.map { $0.isDescendant(of: adapter) } ?? true)
    }
}

/// Which GATT attribute a request is for: a characteristic, or one of its descriptors.
public struct GattAttributeID: Sendable, Hashable, CustomStringConvertible {
    public var characteristic: CharacteristicID
    public var descriptor: String?

    public init(characteristic: CharacteristicID, descriptor: String? = nil) {
        self.characteristic = characteristic
        self.descriptor = descriptor
    }

    public var description: String { descriptor.map { "\(characteristic)/\($0)" } ?? characteristic.rawValue }
}

/// A read from a central (`ReadValue`).
public struct GattReadRequest: Sendable, Equatable {
    public var attribute: GattAttributeID
    public var offset: Int
    public var context: GattRequestContext
}

/// A write from a central (`WriteValue`, or a packet on an acquired write socket).
public struct GattWriteRequest: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// Write without response: nothing is returned to the central.
        case command
        /// Write with response: the central waits for the answer.
        case request
        /// Part of a reliable (queued) write.
        case reliable
    }

    public var attribute: GattAttributeID
    public var value: [UInt8]
    public var offset: Int
    /// From BlueZ's `type` option (newer BlueZ), else inferred; nil when BlueZ 5.66 cannot tell us
    /// (a characteristic with both `write` and `write-without-response`).
    public var kind: Kind?
    /// True when bluetoothd already answered the central and will ignore our reply (BlueZ 5.66 does so for
    /// every write to a characteristic with `write-without-response`): an ATT error cannot be returned.
    public var bluetoothdAnswered: Bool
    /// True for the authorization step of a prepared write (`prepare-authorize`); no value is stored.
    public var prepareAuthorize: Bool
    public var context: GattRequestContext

    /// A write as a test or a stand-in describes it.
    public init(
        attribute: GattAttributeID, value: [UInt8], offset: Int = 0, kind: Kind? = .request, bluetoothdAnswered: Bool = false,
        prepareAuthorize: Bool = false, context: GattRequestContext
    ) {
        self.attribute = attribute
        self.value = value
        self.offset = offset
        self.kind = kind
        self.bluetoothdAnswered = bluetoothdAnswered
        self.prepareAuthorize = prepareAuthorize
        self.context = context
    }
}

/// A change of a central's subscription to notifications or indications.
public struct GattSubscriptionChange: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// `StartNotify`: BlueZ will forward `Value` changes.
        case started
        /// `StopNotify`.
        case stopped
        /// `AcquireNotify`: a socket now carries notifications.
        case acquired
        /// The acquired socket was closed by BlueZ (the last subscriber left).
        case released
    }

    public var characteristic: CharacteristicID
    public var kind: Kind
    public var context: GattRequestContext
}

/// Device object paths as BlueZ builds them.
public enum BlueZDevicePath {
    /// `/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF` for `AA:BB:CC:DD:EE:FF` under `adapter`.
    static func path(of address: BluetoothAddress, on adapter: DBusObjectPath) -> DBusObjectPath {
        adapter.appending("dev_" + address.description.replacing(":", with: "_"))
    }

    /// `hci0` from `/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF`: the adapter a device object is directly below (nil for
    /// any other path).
    public static func adapterName(of path: DBusObjectPath) -> String? {
        let parts = path.rawValue.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "org", parts[2] == "bluez", !parts[3].isEmpty,
            parts[4].hasPrefix("dev_")
        else { return nil }
        return String(parts[3])
    }

    /// `AA:BB:CC:DD:EE:FF` from `/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF`; with `adapter`, only for a device
    /// object directly below it.
    public static func address(of path: DBusObjectPath, on adapter: DBusObjectPath? = nil) -> BluetoothAddress? {
        // One pass over the last 21 bytes, no string searching.
        var raw = path.rawValue
        return raw.withUTF8 { bytes -> BluetoothAddress? in
            // "/dev_" + 17 characters of address, at the end.
            guard bytes.count >= 22, bytes[bytes.count - 22] == UInt8(ascii: "/") else { return nil }
            if let adapter {
                var prefix = adapter.rawValue
                let matches = prefix.withUTF8 { prefix in
                    prefix.count == bytes.count - 22 && prefix.elementsEqual(UnsafeBufferPointer(rebasing: bytes[..<(bytes.count - 22)]))
                }
                guard matches else { return nil }
            }
            let last = UnsafeBufferPointer(rebasing: bytes[(bytes.count - 21)...])
            guard last[0] == UInt8(ascii: "d"), last[1] == UInt8(ascii: "e"), last[2] == UInt8(ascii: "v"),
                last[3] == UInt8(ascii: "_")
            else { return nil }
            return BluetoothAddress(utf8: last[4...], separator: UInt8(ascii: "_"))
        }
    }
}
