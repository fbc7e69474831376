/// An incoming method call to an exported object.
public struct DBusMethodCall: Sendable {
    /// The caller's unique bus name.
    public let sender: String?
    public let path: DBusObjectPath
    public let interface: String?
    public let member: String
    public let arguments: [DBusValue]
    let message: DBusMessage
}
