import Bluetooth
import Lexical

/// `GET /v1/channels`: the profile's L2CAP channels, where each listens and what is open on it (docs/channels.md).
public struct ChannelList: ContractType, Equatable {
    public struct Channel: Codable, Sendable, Equatable {
        public var id: String
        /// The PSM listened on; absent before the device started.
        public var psm: Int?
        /// The largest SDU the device takes.
        public var mtu: Int
        public var security: String
        public var maximumOpen: Int
        /// The service holding Apple's PSM characteristic.
        public var publishedIn: String?
        /// The result the kernel answers every request with while a `refuse` fault holds the channel
        /// (`psm-not-supported`, `insufficient-authentication`, `insufficient-encryption`); absent otherwise.
        public var refusing: String?
        public var open: [Open]

        public init(
            id: String, psm: Int? = nil, mtu: Int, security: String, maximumOpen: Int, publishedIn: String? = nil,
            refusing: String? = nil, open: [Open] = []
        ) {
            self.id = id
            self.psm = psm
            self.mtu = mtu
            self.security = security
            self.maximumOpen = maximumOpen
            self.publishedIn = publishedIn
            self.refusing = refusing
            self.open = open
        }
    }

    /// One open channel.
    public struct Open: Codable, Sendable, Equatable {
        /// Its number in the event log (`#3`).
        public var number: Int
        public var central: String
        /// The largest SDU the central takes.
        public var centralMTU: Int?

        public init(number: Int, central: String, centralMTU: Int? = nil) {
            self.number = number
            self.central = central
            self.centralMTU = centralMTU
        }
    }

    public var channels: [Channel]

    public init(channels: [Channel]) {
        self.channels = channels
    }

    public static let schemaName = "ChannelList"
    public static var schema: Schema {
        let open = Schema.object([
            required("number", .integer(minimum: 1)), required("central", .string(pattern: Patterns.address)),
            optional("centralMTU", .integer(minimum: 23, maximum: 65_535)),
        ])
        let channel = Schema.object([
            required("id", .string(pattern: Patterns.identifier)), optional("psm", .integer(minimum: 1, maximum: 255)),
            required("mtu", .integer(minimum: 23, maximum: 65_535)),
            required("security", .string(enumeration: ["none", "encrypted", "authenticated", "secure"])),
            required("maximumOpen", .integer(minimum: 1, maximum: 64)), optional("publishedIn", .string(pattern: Patterns.identifier)),
            optional(
                "refusing",
                .string(enumeration: LECreditBasedChannel.Refusal.held.map(\.rawValue))),
            required("open", .array(open)),
        ])
        return .object([required("channels", .array(channel))])
    }
    public static var examples: [ChannelList] {
        [
            ChannelList(channels: [
                Channel(
                    id: "data", psm: 0x80, mtu: 2048, security: "none", maximumOpen: 8, publishedIn: "files",
                    open: [Open(number: 3, central: "AA:BB:CC:DD:EE:01", centralMTU: 2048)]),
                Channel(id: "ctl", psm: 0x85, mtu: 64, security: "encrypted", maximumOpen: 1, refusing: "psm-not-supported"),
                Channel(id: "log", mtu: 64, security: "none", maximumOpen: 1),
            ])
        ]
    }
}

/// `POST /v1/channels/{id}/send`: the SDU queued on every open channel of the id.
public struct ChannelSent: ContractType, Equatable {
    public var ok: Bool
    public var channel: String
    public var hex: String
    /// How many open channels it was queued on.
    public var channels: Int

    public init(channel: String, hex: String, channels: Int) {
        self.ok = true
        self.channel = channel
        self.hex = hex
        self.channels = channels
    }

    public static let schemaName = "ChannelSent"
    public static var schema: Schema {
        .object([
            required("ok", .trueFlag), required("channel", .string), required("hex", .string(pattern: "^([0-9a-f]{2})*$")),
            required("channels", .integer(minimum: 1)),
        ])
    }
    public static var examples: [ChannelSent] { [ChannelSent(channel: "data", hex: "8101", channels: 1)] }
}
