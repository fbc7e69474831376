import DBus

/// Why talking to BlueZ failed; the description is a one-line reason fit for a user.
public enum BlueZError: Error, Sendable, CustomStringConvertible {
    /// Nobody owns `org.bluez` on the bus.
    case bluetoothdNotRunning
    /// No adapter matches the name or address asked for.
    case adapterNotFound(String, available: [String])
    /// The system bus itself cannot be reached.
    case busUnavailable(String)
    /// An advertisement does not fit its byte budget.
    case advertisementTooLarge(AdvertisementBudget)
    /// The profile asks for advertising the adapter does not offer (each problem located in the profile).
    case advertisingBeyondAdapter([String])
    /// BlueZ refused or failed a call.
    case call(String, DBusError)
    /// A profile's L2CAP channel cannot listen (what, where, why).
    case channelUnavailable(String)
    /// The kernel refused a change to the controller that bluetoothd's D-Bus API does not offer (what, why).
    case controller(String, ManagementError)

    public var description: String {
        switch self {
        case .bluetoothdNotRunning:
            "org.bluez not on the system bus: is bluetoothd running?"
        case .adapterNotFound(let wanted, let available):
            available.isEmpty
                ? "adapter \(wanted) not found: bluetoothd reports no adapters"
                : "adapter \(wanted) not found (available: \(available.joined(separator: ", ")))"
        case .busUnavailable(let reason):
            "cannot reach the system bus: \(reason)"
        case .advertisementTooLarge(let budget):
            budget.description
        case .advertisingBeyondAdapter(let problems):
            problems.joined(separator: "; ")
        case .channelUnavailable(let reason):
            reason
        case .call(let what, let error):
            "\(what): \(error)"
        case .controller(let what, let error):
            "\(what): \(error)"
        }
    }
}
