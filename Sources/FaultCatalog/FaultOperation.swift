/// The kind of operation a fault watches (its `on` key).
public enum FaultOperation: String, Codable, Sendable, Equatable, CaseIterable {
    /// A read from a central (answer).
    case read
    /// A write from a central (answer; write-with-response only can carry an error).
    case write
    /// An outgoing notification.
    case notify
    /// An outgoing indication.
    case indicate
    /// A connection of a central.
    case connect
    /// A central pairing: bluetoothd asks gattemu's pairing agent (just works, numeric comparison, passkey entry).
    case pair
    /// Once, when the fault is installed (at start for profile/scenario faults, at once from the API),
    /// optionally `after` a time: adapter-level faults (silence, power-cycle, advertise, disconnect all).
    case start
    /// A chunk of a firmware image upload (SMP image upload, profiles with a `firmware` section); a fault's `percent`
    /// narrows it to the chunks that reach that share of the image.
    case upload
    /// A confirm of the firmware (SMP image state write with `confirm`, profiles with a `firmware` section).
    case confirm
    /// A reset asked for over SMP (profiles with a `firmware` section): the device is about to reboot.
    case reset
    /// A central's request for an L2CAP channel of the profile's `channels`, before it is accepted.
    case channel
    /// An SDU received on an L2CAP channel, before the rules see it.
    case sdu
    /// An SDU sent on an L2CAP channel (each SDU of a stream too).
    case send

    /// Operations on one characteristic: the only ones a fault's `characteristic` may narrow.
    public var isAboutCharacteristic: Bool { self == .read || self == .write || self == .notify || self == .indicate }

    /// Operations on an L2CAP channel: the only ones a fault's `channel` may narrow.
    public var isAboutChannel: Bool { self == .channel || self == .sdu || self == .send }

    /// Operations of a firmware-update target (SMP requests): the only ones a fault's `percent` may narrow (`upload`).
    public var isAboutFirmware: Bool { self == .upload || self == .confirm || self == .reset }
}
