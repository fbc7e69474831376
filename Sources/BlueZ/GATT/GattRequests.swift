import Bluetooth
import DBus

/// Where a GATT request came from: the central's device object and what BlueZ said of the link.
public struct GattRequestContext: Sendable, Equatable {
    /// The central's `org.bluez.Device1` object, when BlueZ names it.
    public var device: DBusObjectPath?
    /// The negotiated ATT MTU, when BlueZ gives it.
    public var mtu: UInt16?
    /// `LE` or `BR/EDR`, when BlueZ gives it.
    public var link: String?

    /// The central's address, read from the device path (`…/dev_AA_BB_CC_DD_EE_FF`).
    public var centralAddress: String? { device.flatMap(BlueZDevicePath.address(of:)) }

    /// The D-Bus call that carried the request, if any (see ``begin()``).
    let call: DBusMethodCall?

    init(options: GattRequestOptions, call: DBusMethodCall? = nil) {
        device = options.device
        mtu = options.mtu
        link = options.link
        self.call = call
    }

    public init(device: DBusObjectPath? = nil, mtu: UInt16? = nil, link: String? = nil) {
        self.device = device
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
        lhs.device == rhs.device && lhs.mtu == rhs.mtu && lhs.link == rhs.link
    }
}

/// The `a{sv}` options bluetoothd passes with a GATT call, read in one pass over the entries (this runs for
/// every read and write: no dictionary is built); unknown keys and mistyped values are ignored.
///
/// Numbers are checked here, where they enter: an offset outside 0…``maximumValueLength`` makes ``problem``
/// say so (the call is refused with `InvalidOffset`), an MTU outside 23…517 is taken as not given.
struct GattRequestOptions {
    var device: DBusObjectPath?
    var mtu: UInt16?
    var link: String?
    /// Always within 0…``maximumValueLength`` (0 when the caller's was not: see ``problem``).
    var offset = 0
    /// `request`, `command` or `reliable`, from BlueZ versions that say.
    var type: String?
    var prepareAuthorize = false
    /// Why the call must be refused before it reaches the handler, if it must.
    var problem: GattError?

    /// The longest attribute value ATT allows, and so the largest meaningful offset.
    static let maximumValueLength = ATTMTU.maximumValueLength
    /// The ATT MTUs a link can have (Core spec: LE minimum 23; BlueZ's maximum 517).
    static let validMTUs: ClosedRange<UInt16> = 23...517

    init() {}

    /// Reads the current argument of `reader` (the call's options dictionary).
    init(reading reader: inout DBusArgumentReader) {
        reader.forEachEntry { key, value in
            switch key {
            case "device": device = value.objectPath()
            case "mtu": mtu = value.integer().flatMap { UInt16(exactly: $0) }.flatMap { Self.validMTUs.contains($0) ? $0 : nil }
            case "link": link = value.string().map { String($0.prefix(16)) }
            case "offset":
                if let given = value.integer(), (0...Int64(Self.maximumValueLength)).contains(given) {
                    offset = Int(given)
                } else {
                    problem = .invalidOffset
                }
            case "type": type = value.string()
            case "prepare-authorize": prepareAuthorize = value.boolean() ?? false
            default: break
            }
        }
    }

    /// The options of a call whose only argument they are (`ReadValue`, `AcquireWrite`, `AcquireNotify`).
    init(of call: DBusMethodCall) {
        self = call.readArguments { GattRequestOptions(reading: &$0) }
    }

    /// `ReadValue(a{sv})`'s argument, or the error the call is refused with.
    static func read(_ reader: inout DBusArgumentReader) -> Result<GattRequestOptions, GattError> {
        let options = GattRequestOptions(reading: &reader)
        return options.problem.map { .failure($0) } ?? .success(options)
    }

    /// `WriteValue(ay, a{sv})`'s arguments, or the error the call is refused with: no central can write more
    /// than an attribute holds (only a stranger on the bus would try).
    static func write(_ reader: inout DBusArgumentReader) -> Result<(value: [UInt8], options: GattRequestOptions), GattError> {
        let value = reader.bytes() ?? []
        let options = GattRequestOptions(reading: &reader)
        if let problem = options.problem { return .failure(problem) }
        guard options.offset + value.count <= maximumValueLength else { return .failure(.invalidValueLength) }
        return .success((value, options))
    }
}

/// The decoding of GATT calls, for the fuzz target: what the handlers do with a call's arguments.
@_spi(Fuzzing) public enum GattCallDecoding {
    /// Decodes the arguments as `ReadValue` and as `WriteValue` would; traps if a number that passes escapes
    /// the range the handlers rely on.
    public static func check(_ reader: inout DBusArgumentReader, asWrite: Bool) {
        if asWrite {
            guard case .success(let (value, options)) = GattRequestOptions.write(&reader) else { return }
            precondition((0...GattRequestOptions.maximumValueLength).contains(options.offset + value.count))
            check(options)
        } else {
            guard case .success(let options) = GattRequestOptions.read(&reader) else { return }
            check(options)
        }
    }

    private static func check(_ options: GattRequestOptions) {
        precondition((0...GattRequestOptions.maximumValueLength).contains(options.offset))
        precondition(options.mtu.map(GattRequestOptions.validMTUs.contains) ?? true)
        _ = GattRequestContext(options: options).centralAddress
    }
}

/// Which GATT attribute a request is for: a characteristic, or one of its descriptors.
public struct GattAttributeID: Sendable, Hashable, CustomStringConvertible {
    public var characteristic: String
    public var descriptor: String?

    public init(characteristic: String, descriptor: String? = nil) {
        self.characteristic = characteristic
        self.descriptor = descriptor
    }

    public var description: String { descriptor.map { "\(characteristic)/\($0)" } ?? characteristic }
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

    public var characteristic: String
    public var kind: Kind
    public var context: GattRequestContext
}

/// Device object paths as BlueZ builds them.
public enum BlueZDevicePath {
    /// `/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF` for `AA:BB:CC:DD:EE:FF` (any case) under `adapter`.
    static func path(of address: String, on adapter: DBusObjectPath) -> DBusObjectPath {
        adapter.appending("dev_" + address.uppercased().replacing(":", with: "_"))
    }

    /// `AA:BB:CC:DD:EE:FF` from `/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF`.
    public static func address(of path: DBusObjectPath) -> String? {
        // Called for every request and notification: one pass over the last 21 bytes, no string searching.
        var raw = path.rawValue
        return raw.withUTF8 { bytes -> String? in
            // "/dev_" + 17 characters of address, at the end.
            guard bytes.count >= 22, bytes[bytes.count - 22] == UInt8(ascii: "/") else { return nil }
            let last = UnsafeBufferPointer(rebasing: bytes[(bytes.count - 21)...])
            guard last[0] == UInt8(ascii: "d"), last[1] == UInt8(ascii: "e"), last[2] == UInt8(ascii: "v"),
                last[3] == UInt8(ascii: "_")
            else { return nil }
            return String(unsafeUninitializedCapacity: 17) { address in
                for index in 0..<17 {
                    let byte = last[4 + index]
                    address[index] = byte == UInt8(ascii: "_") ? UInt8(ascii: ":") : byte
                }
                return 17
            }
        }
    }
}
