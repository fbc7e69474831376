/// Which bus a ``DBusConnection`` connects to.
public enum DBusBus: Sendable, Equatable {
    /// The system bus (`DBUS_SYSTEM_BUS_ADDRESS` or the default socket).
    case system
    /// The session bus of the current login.
    case session
    /// A message bus at an explicit address, e.g. `unix:path=/tmp/bus`.
    case address(String)
}
