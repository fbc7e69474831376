/// An incoming method call to an exported object.
///
/// Handlers of one connection start in the order their calls arrived: each waits until the call before it
/// has called ``begin()`` or returned. A handler that may wait long (a delayed answer) calls ``begin()`` once
/// it has taken note of the call, so later calls need not wait for its answer.
public struct DBusMethodCall: Sendable {
    /// The caller's unique bus name.
    public let sender: String?
    public let path: DBusObjectPath
    public let interface: String?
    public let member: String
    public let arguments: [DBusValue]
    let message: DBusMessage
    /// Opened when this call has begun; the next call's handler waits for it.
    let gate: DBusCallGate?

    init(sender: String?, path: DBusObjectPath, interface: String?, member: String, arguments: [DBusValue],
         message: DBusMessage, gate: DBusCallGate? = nil) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
        self.message = message
        self.gate = gate
    }

    /// False when the caller flagged the call no-reply: whatever the handler returns is dropped.
    public var expectsReply: Bool { !message.noReplyExpected }

    /// Lets the connection's next method call start now, before this one is answered.
    public func begin() { gate?.open() }
}
