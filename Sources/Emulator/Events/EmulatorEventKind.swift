/// What a logged event is about (`event` in its JSON and the control API's `EventKind`, which lists the same).
public enum EmulatorEventKind: String, Sendable, CaseIterable {
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
