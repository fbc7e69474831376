import Bluetooth
import TextEscaping

/// Which remote device to look for: by address, by its advertised name, or by a prefix of that name.
///
/// Names are matched against `Device1.Name` (what the device advertises, or what BlueZ read from it), case
/// sensitively; `Alias` is not used (BlueZ makes one up, and users may set it).
public enum DeviceQuery: Sendable, Hashable, CustomStringConvertible {
    case address(BluetoothAddress)
    /// The whole name, exactly.
    case name(String)
    /// Names that start with this.
    case namePrefix(String)

    /// The longest name a device can have (GAP Device Name, 248 bytes).
    public static let maximumNameBytes = 248

    /// An address (`AA:BB:CC:DD:EE:FF`, `aa-bb-…`, 12 hex digits), `NAME*` for a prefix, else a whole name;
    /// nil for an empty name, one longer than 248 bytes, or one with control characters.
    public init?(parsing text: String) {
        if let address = BluetoothAddress(text) {
            self = .address(address)
            return
        }
        var name = text
        let prefix = name.hasSuffix("*")
        if prefix { name.removeLast() }
        guard !name.isEmpty, name.utf8.count <= Self.maximumNameBytes,
            !name.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
        else { return nil }
        self = prefix ? .namePrefix(name) : .name(name)
    }

    public func matches(_ device: DeviceProperties) -> Bool {
        switch self {
        case .address(let address): device.address == address
        case .name(let name): device.name == name
        case .namePrefix(let prefix): device.name?.hasPrefix(prefix) ?? false
        }
    }

    public var description: String {
        switch self {
        case .address(let address): address.description
        case .name(let name): "named \"\(TerminalText.escaped(name, limit: 120))\""
        case .namePrefix(let prefix): "named \"\(TerminalText.escaped(prefix, limit: 120))…\""
        }
    }
}
