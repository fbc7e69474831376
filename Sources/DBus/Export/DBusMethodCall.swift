/// An incoming method call to an exported object.
public struct DBusMethodCall: Sendable {
    /// The caller's unique bus name.
    public let sender: String?
    public let path: DBusObjectPath
    public let interface: String?
    public let member: String
    public let arguments: [DBusValue]
    let message: DBusMessage

    /// False when the caller flagged the call no-reply: whatever the handler returns is dropped.
    public var expectsReply: Bool { !message.noReplyExpected }
}
