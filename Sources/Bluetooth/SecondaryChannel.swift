/// BlueZ LEAdvertisement1 `SecondaryChannel`: the PHY of an extended advertisement's secondary channel. Setting
/// one makes the advertisement extended (Bluetooth 5: up to the adapter's `MaxAdvLen`, 251 bytes); the primary
/// channel is LE 1M, or LE Coded with `Coded`.
public enum SecondaryChannel: String, Sendable, Equatable, CaseIterable {
    case oneM = "1M"
    case twoM = "2M"
    case coded = "Coded"
}
