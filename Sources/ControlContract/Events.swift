/// What an event is about (`event` in the JSON): the event log's own kinds (`EmulatorEventKind`), the same list.
public enum EventKind: String, Codable, Sendable, CaseIterable {
    case started, stopped, advertising
    case advertisingStopped = "advertising-stopped"
    case advertisementChanged = "advertisement-changed"
    case connected, disconnected, mtu, subscribed, unsubscribed
    case read, write, answer, notify, indicate, confirmed
    case rule, fault, note, error
    case bluetoothdLost = "bluetoothd-lost"
    case bluetoothdBack = "bluetoothd-back"
    /// A D-Bus message gattemu refused: a spoofed signal, a call from someone other than bluetoothd.
    case refused
    /// bluetoothd asked gattemu's pairing agent (just works, numeric comparison, passkey) and how it was answered.
    case pairing
    /// A central finished pairing; `unpaired`: gattemu made bluetoothd forget it.
    case paired, unpaired
    /// `gattemu relay`: the real device's side of an operation (its answer, or a notification it sent), with the
    /// time the device took; `device-lost`/`device-back`: the link to the real device went down, came back.
    case relayed
    case deviceLost = "device-lost"
    case deviceBack = "device-back"
    /// A firmware-update target (`firmware` in the profile): each SMP request decoded with its answer (group, command,
    /// sequence, offsets, rc), the upload's end, test and confirm, the reset and the image booted after it.
    case firmware
    /// An L2CAP channel of the profile's `channels`: listening, a request accepted or refused, an SDU in or out (its
    /// first bytes), a stream's start and end, the close and who closed it.
    case channel
}

/// One logged event, as in `GET /v1/events`, the event stream's `data:` lines and `--events` files.
public struct Event: ContractType, Equatable {
    public var seq: Int
    /// Milliseconds since gattemu started (monotonic), three decimals.
    public var t: Double
    public var event: EventKind
    public var central: String?
    public var characteristic: String?
    /// Hex, lowercase, no separators.
    public var value: String?
    public var detail: String?
    /// The ATT MTU of the central's link when the operation happened (reads, writes, answers, notifications,
    /// indications, subscriptions), once bluetoothd has told it.
    public var mtu: Int?
    /// The rig's device the event is of; absent when gattemu runs one device.
    public var device: String?
    /// How far a firmware upload is (the `firmware` event of each chunk): bytes received of the image's length; how
    /// far a channel's stream is (its `channel` events): bytes sent of its length.
    public var progress: Progress?

    public struct Progress: Codable, Sendable, Equatable {
        public var done: Int
        public var total: Int

        public init(done: Int, total: Int) {
            self.done = done
            self.total = total
        }
    }

    public init(
        seq: Int, t: Double, event: EventKind, central: String? = nil, characteristic: String? = nil, value: String? = nil,
        detail: String? = nil, mtu: Int? = nil, device: String? = nil, progress: Progress? = nil
    ) {
        self.progress = progress
        self.seq = seq
        self.t = t
        self.event = event
        self.central = central
        self.characteristic = characteristic
        self.value = value
        self.detail = detail
        self.mtu = mtu
        self.device = device
    }

    public static let schemaName = "Event"
    public static var schema: Schema {
        .object([
            required("seq", .described("Sequence number from 1", .integer(minimum: 1))),
            required("t", .described("Milliseconds since start (monotonic)", .number(minimum: 0))),
            required("event", .string(enumeration: EventKind.allCases.map(\.rawValue))),
            optional("central", .string),
            optional("characteristic", .string),
            optional("value", .described("hex", .string(pattern: "^([0-9a-f]{2})*$"))),
            optional("detail", .string),
            optional("mtu", .described("ATT MTU of the central's link for this operation", .integer(minimum: 0))),
            optional("device", .described("The rig's device (GET /v1/devices) the event is of; absent with one device", .string)),
            optional(
                "progress",
                .described(
                    "A firmware upload's bytes received (done) of the image's length (total), on the firmware event of each chunk",
                    .object([required("done", .integer(minimum: 0)), required("total", .integer(minimum: 1))]))),
        ])
    }
    public static var examples: [Event] {
        [
            Event(
                seq: 1, t: 12.5, event: .write, central: "AA:BB:CC:DD:EE:01", characteristic: "rx", value: "5160", detail: "request",
                mtu: 185, device: "lock"),
            Event(
                seq: 2, t: 20.25, event: .firmware, central: "AA:BB:CC:DD:EE:01", characteristic: "smp",
                detail: "smp: image upload seq 3: upload 0+240 of 180240", progress: Progress(done: 240, total: 180_240)),
        ]
    }
}

/// `GET /v1/events`: the events after `since`, oldest first.
public struct EventPage: ContractType, Equatable {
    public var events: [Event]
    /// seq of the last event returned (or `since`).
    public var last: Int
    /// seq of the newest event logged.
    public var latest: Int

    public init(events: [Event], last: Int, latest: Int) {
        self.events = events
        self.last = last
        self.latest = latest
    }

    public static let schemaName = "EventPage"
    public static var schema: Schema {
        .object([
            required("events", .array(Event.reference)),
            required("last", .described("seq of the last event returned (or since)", .integer(minimum: 0))),
            required("latest", .described("seq of the newest event logged", .integer(minimum: 0))),
        ])
    }
    public static var examples: [EventPage] {
        Event.examples.map { EventPage(events: [$0], last: $0.seq, latest: $0.seq) }
    }
}
