/// A message a ``DBusConnection`` refused to act on, as told to ``DBusConnection/onRefusal(_:)``.
public struct DBusRefusal: Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable, Equatable {
        /// A signal addressed to this connection alone (only the bus itself may send those).
        case unicastSignal = "signal sent to us directly"
        /// A signal a subscription asked for, but from someone other than the sender it names.
        case wrongSender = "signal from a sender that does not own the name it claims"
        /// A method call the object's caller policy denied.
        case callerNotAllowed = "method call from a caller that is not allowed"
    }

    public var reason: Reason
    /// The unique name of whoever sent it (as the bus says).
    public var sender: String?
    public var path: DBusObjectPath?
    public var interface: String?
    public var member: String?

    /// `signal org.freedesktop.DBus.NameOwnerChanged on /org/freedesktop/DBus from :1.42: signal sent to us directly`
    public var description: String {
        let what = reason == .callerNotAllowed ? "call" : "signal"
        let name = [interface, member].compactMap { $0 }.joined(separator: ".")
        return "\(what) \(name) on \(path?.rawValue ?? "?") from \(sender ?? "?"): \(reason.rawValue)"
    }
}
