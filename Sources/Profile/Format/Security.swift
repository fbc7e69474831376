import Bluetooth

/// How the device pairs (the profile's `"security"`): what gattemu's pairing agent tells bluetoothd.
///
/// A profile without the section gets ``standard`` when a characteristic asks for an encrypted link
/// (``DeviceProfile/pairingSecurity``), and no agent at all otherwise.
public struct SecurityDefinition: Sendable, Equatable {
    /// Whether a central may pair.
    public enum Pairing: String, Sendable, CaseIterable, Equatable {
        case accept, refuse
    }

    /// Who answers a numeric comparison or a just-works confirmation bluetoothd asks for.
    public enum Confirmation: String, Sendable, CaseIterable, Equatable {
        /// gattemu confirms at once.
        case auto
        /// The control API does (`POST /v1/pairing`); unanswered prompts are refused after ``SecurityDefinition/promptSeconds``.
        case api
    }

    /// The device's IO capability; it decides between just works, passkey entry and numeric comparison.
    public var io: IOCapability = .noInputNoOutput
    public var pairing: Pairing = .accept
    /// The passkey gattemu types when the central shows one (`io` KeyboardOnly or KeyboardDisplay); nil: the
    /// control API types it.
    public var passkey: UInt32?
    public var confirm: Confirmation = .auto
    /// LE Secure Connections: `on` (the kernel's default, legacy pairing when the central lacks it) or `off` (legacy
    /// only, set on the controller through the kernel: needs root). `only` is refused: Linux cannot keep such a link.
    public var secureConnections: SecureConnectionsMode = .on
    public var path: String = "security"

    public init() {}

    /// What gattemu does for a profile that needs encryption and says nothing: just works, accepted.
    public static let standard = SecurityDefinition()

    /// How long a prompt waits for the control API before it is refused: bluetoothd gives an agent 60 s.
    public static let promptSeconds = 50
}

extension DeviceProfile {
    /// The pairing behaviour gattemu's agent follows: the `security` section, or ``SecurityDefinition/standard``
    /// when a characteristic or descriptor asks for an encrypted link; nil when the profile needs no agent.
    public var pairingSecurity: SecurityDefinition? {
        if let security { return security }
        let secured = services.contains { service in
            service.characteristics.contains { characteristic in
                characteristic.declaredFlags.security.needsPairing
                    || characteristic.descriptors.contains { $0.declaredFlags.security.needsPairing }
            }
        }
        return secured ? .standard : nil
    }
}
