import Bluetooth

/// `"channels"`: an L2CAP connection-oriented channel the device listens on (LE credit-based flow control, as iOS's
/// `CBL2CAPChannel` and Android's `createL2capChannel` open). Each central that connects to the PSM gets a channel
/// of its own; rules see `{"open": id}`, `{"sdu": id, …}` (an SDU received, matched like a write) and
/// `{"close": id}`, and answer with `send`, `stream` and `closeChannel` actions.
public struct ChannelDefinition: Sendable, Equatable {
    public var id: String
    public var psm: PSM
    /// The largest SDU the device takes (its receive MTU; the central's is what it may send back).
    public var mtu = 2048
    /// What the link must be before the channel is accepted; the kernel refuses a central short of it without pairing
    /// (result 0x0008, insufficient encryption, for `encrypted`; 0x0005, insufficient authentication, for the others).
    public var security: ChannelSecurity = .none
    /// A service to publish the PSM in: Apple's L2CAP PSM characteristic (``BluetoothUUID/l2capPSM``, a
    /// little-endian u16, read-only) is added to it as ``psmCharacteristic``.
    public var publish: String?
    /// Channels of this PSM open at once; the next central's request is refused (result 0x0006) and logged.
    public var maximumOpen = 8
    public var description: String?
    public var path: String

    public init(id: String, psm: PSM, path: String) {
        self.id = id
        self.psm = psm
        self.path = path
    }

    /// The id of the PSM characteristic `publish` adds.
    public var psmCharacteristic: CharacteristicID { CharacteristicID("\(id)-psm") }

    /// The PSM: one given, or any free one of the LE dynamic range, which the kernel picks at start.
    public enum PSM: Sendable, Equatable, CustomStringConvertible {
        case fixed(UInt16)
        case any

        public var description: String {
            switch self {
            case .fixed(let value): LECreditBasedChannel.text(value)
            case .any: "any"
            }
        }
    }

    /// LE PSMs: 0x0001–0x007F are assigned by the Bluetooth SIG (the kernel asks CAP_NET_BIND_SERVICE for them),
    /// 0x0080–0x00FF are for anyone.
    public static let psms = LECreditBasedChannel.psms
    /// bluetoothd listens on this one (EATT).
    public static let eattPSM = LECreditBasedChannel.eattPSM
    /// An LE credit-based channel's MTU: at least 23 (the peer refuses less), at most 65,535.
    public static let mtus = LECreditBasedChannel.mtus
    public static let maximumOpenRange = 1...64

    /// The characteristic `publish` adds, its value the PSM as Apple's guidelines have it (`80 00` for 0x0080;
    /// `00 00` until the kernel picked one for `"any"`).
    func psmCharacteristicDefinition() -> CharacteristicDefinition {
        let value: UInt16 = if case .fixed(let psm) = psm { psm } else { 0 }
        return CharacteristicDefinition(
            id: psmCharacteristic, uuid: .l2capPSM, flags: [.read], value: ValueSource(template: .literal(Self.psmBytes(value))),
            maxLength: 2, storeWrites: nil, descriptors: [], description: "L2CAP PSM of channel \(id)", handle: nil,
            path: JSONPath.appending("publish", to: path))
    }

    /// A PSM as the characteristic holds it: little-endian u16.
    public static func psmBytes(_ psm: UInt16) -> [UInt8] { [UInt8(psm & 0xFF), UInt8(psm >> 8)] }
}

/// A channel's required link security (`BT_SECURITY`).
public enum ChannelSecurity: String, Sendable, Equatable, CaseIterable {
    /// No pairing asked.
    case none
    /// An encrypted link (Just Works pairing is enough).
    case encrypted
    /// An encrypted link with a key made with MITM protection (passkey or numeric comparison).
    case authenticated
    /// An authenticated LE Secure Connections key.
    case secure
}

/// What a `stream` action sends: `bytes` bytes of a counting pattern (byte i is i mod 256), or a file's contents.
public enum StreamSource: Sendable, Equatable, CustomStringConvertible {
    case pattern(bytes: Int)
    case file(String)

    /// The most a `stream` of the pattern sends.
    public static let maximumPatternBytes = 1 << 30

    public var description: String {
        switch self {
        case .pattern: "the counting pattern"
        case .file(let path): "file \(path)"
        }
    }
}

extension DeviceProfile {
    /// The channel with this id.
    public func channel(_ id: String) -> ChannelDefinition? {
        channels.first { $0.id == id }
    }

    /// Adds the PSM characteristic of each channel that publishes its PSM to the service named, before rules are
    /// decoded (so they may name it); a service that is not there is reported by the semantic checks.
    mutating func publishChannelPSMs() {
        for channel in channels {
            guard let service = channel.publish, let index = services.firstIndex(where: { $0.id == service }) else { continue }
            services[index].characteristics.append(channel.psmCharacteristicDefinition())
        }
    }
}
