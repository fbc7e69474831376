import BlueZ

/// How many ATT bearers bluetoothd opens per LE link (`[GATT] Channels` of the main.conf it was started with; more
/// than one is Enhanced ATT). bluetoothd spreads a central's write commands over them, and ATT orders nothing across
/// bearers: a device that offers EATT can receive the relay's write commands out of order (docs/relay.md).
public struct ATTChannelSetting: Sendable, Equatable {
    /// At most this many ATT bearers per link; nil when main.conf sets no valid value, and bluetoothd's version decides
    /// (3 up to BlueZ 5.66, 1 from 5.67 on).
    public var channels: Int?
    /// The main.conf it comes from, as bluetoothd's command line names it.
    public var file: String

    /// The values bluetoothd takes (BlueZ 5.66 clamps others into it; later versions ignore them).
    static let valid = 1...5

    public init(channels: Int?, file: String) {
        self.channels = channels
        self.file = file
    }

    /// Whether write commands may reach a device out of order (also when bluetoothd's version decides).
    public var mayReorder: Bool { (channels ?? 3) > 1 }

    /// The setting of the bluetoothd `stack` talks to (``BluetoothdConfiguration``); nil when it cannot be told.
    public static func of(_ stack: BlueZStack) async -> ATTChannelSetting? {
        guard let configuration = await BluetoothdConfiguration.of(stack) else { return nil }
        return ATTChannelSetting(configuration)
    }

    init(_ configuration: BluetoothdConfiguration) {
        self.init(channels: configuration.integer(section: "GATT", key: "Channels", valid: Self.valid), file: configuration.file)
    }

    /// The event log's line about `setting`, or about not knowing it (nil).
    public static func note(_ setting: ATTChannelSetting?) -> String {
        setting?.note
            ?? "relay: could not read bluetoothd's main.conf: if its [GATT] Channels is above 1 (BlueZ 5.66 and older open "
            + "up to 3 ATT channels per link without it, 5.67 and later one), the relay's write commands can reach a device "
            + "that offers Enhanced ATT out of order (docs/relay.md, \"EATT\")"
    }

    /// What to add to the reason the relay (or a clone) could not read the device, when Enhanced ATT may be why: the
    /// connection or the reads of the table failed, bluetoothd may open more than one ATT channel per link, and this
    /// machine's kernel opens them as enhanced credit-based channels (`enhancedCredits`: Linux 6.2 and later by
    /// default; nil when that cannot be told). With a device that runs BlueZ too, both ends then open enhanced bearers
    /// at once and their requests can cross; plain LE credit-based bearers (Linux 6.1) work. Nil otherwise.
    public static func hint(after error: RelayError, setting: ATTChannelSetting?, enhancedCredits: Bool?) -> String? {
        guard case .device(let central) = error else { return nil }
        return hint(after: central, setting: setting, enhancedCredits: enhancedCredits)
    }

    /// ``hint(after:setting:enhancedCredits:)`` for a central's error.
    public static func hint(after error: CentralError, setting: ATTChannelSetting?, enhancedCredits: Bool?) -> String? {
        guard mayConcern(error), setting?.mayReorder ?? true, enhancedCredits != false else { return nil }
        let opens =
            switch (setting, setting?.channels) {
            case (let setting?, let channels?): "opens up to \(channels) ATT channels per link ([GATT] Channels in \(setting.file))"
            case (let setting?, nil): "may open up to 3 ATT channels per link (\(setting.file) sets no [GATT] Channels)"
            default: "may open several ATT channels per link (its main.conf could not be read)"
            }
        return "; bluetoothd here \(opens): Enhanced ATT, which with a device that runs BlueZ too can stall discovery; set "
            + "[GATT] Channels = 1 in its main.conf and restart it (docs/relay.md, \"EATT\")"
    }

    /// Whether Enhanced ATT may be why a central failed so: the connection or the reads of the table failed (not a
    /// device that was not found, nor bluetoothd refusing a call). Asked before bluetoothd's setting is looked up.
    public static func mayConcern(_ error: CentralError) -> Bool {
        switch error {
        case .connectFailed, .lost: true
        default: false
        }
    }

    /// The event log's line about it.
    public var note: String {
        switch channels {
        case 1?:
            "relay: bluetoothd opens one ATT channel per link ([GATT] Channels = 1 in \(file)): write commands reach the "
                + "device in order"
        case let channels?:
            "relay: bluetoothd opens up to \(channels) ATT channels per link ([GATT] Channels in \(file)): with a device that "
                + "offers Enhanced ATT, the relay's write commands can reach it out of order; set Channels = 1 there and "
                + "restart bluetoothd (docs/relay.md, \"EATT\")"
        case nil:
            "relay: \(file) sets no valid [GATT] Channels: BlueZ 5.66 and older then open up to 3 ATT channels per link "
                + "(Enhanced ATT), and the relay's write commands can reach a device that offers it out of order (5.67 and "
                + "later open one); set Channels = 1 there to be sure and restart bluetoothd (docs/relay.md, \"EATT\")"
        }
    }
}
