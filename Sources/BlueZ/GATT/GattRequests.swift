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

    init(options: [String: DBusValue], call: DBusMethodCall? = nil) {
        device = options["device"]?.objectPath
        mtu = options["mtu"]?.integer.flatMap { UInt16(exactly: $0) }
        link = options["link"]?.string
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
    /// `AA:BB:CC:DD:EE:FF` from `/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF`.
    public static func address(of path: DBusObjectPath) -> String? {
        // Called for every request and notification: plain UTF-8 bytes, no Foundation string search.
        let utf8 = path.rawValue.utf8
        let start = (utf8.lastIndex(of: UInt8(ascii: "/")).map { utf8.index(after: $0) }) ?? utf8.startIndex
        let last = utf8[start...]
        guard last.count == 21, last.starts(with: "dev_".utf8) else { return nil }
        return String(decoding: last.dropFirst(4).map { $0 == UInt8(ascii: "_") ? UInt8(ascii: ":") : $0 }, as: UTF8.self)
    }
}
