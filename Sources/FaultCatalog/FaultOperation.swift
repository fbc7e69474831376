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

    /// Operations on one characteristic: the only ones a fault's `characteristic` may narrow.
    public var isAboutCharacteristic: Bool { self == .read || self == .write || self == .notify || self == .indicate }
}
