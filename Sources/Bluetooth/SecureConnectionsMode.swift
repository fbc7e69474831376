/// Whether a device pairs with LE Secure Connections (Core spec Vol 3 Part H 2.3.2), as a real one does: `off`, a
/// Bluetooth 4.0/4.1 device that knows only legacy pairing; `on`, Secure Connections when the central offers it,
/// else legacy; `only`, a central without Secure Connections is refused ("Authentication Requirements") — on Linux
/// the kernel then also drops every LE link once it is encrypted, so gattemu does not offer it.
public enum SecureConnectionsMode: String, Sendable, CaseIterable, Equatable {
    case off, on, only

    /// The parameter of the kernel's Set Secure Connections command.
    public var managementValue: UInt8 {
        switch self {
        case .off: 0x00
        case .on: 0x01
        case .only: 0x02
        }
    }
}
