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
    let message: DBusMessage
    /// Opened when this call has begun; the next call's handler waits for it.
    let gate: DBusCallGate?

    init(sender: String?, path: DBusObjectPath, interface: String?, member: String, message: DBusMessage, gate: DBusCallGate? = nil) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.message = message
        self.gate = gate
    }

    /// The arguments as values, decoded from the message on each use (calls that arrive often read them with
    /// ``readArguments(_:)`` instead); a message that cannot be decoded throws `InvalidArgs`.
    public var arguments: [DBusValue] {
        get throws(DBusError) {
            do {
                return try message.arguments()
            } catch {
                throw .named(DBusError.Name.invalidArgs, message: error.description)
            }
        }
    }

    /// Reads the arguments in order with `body`, without building values; the reader is valid only inside it.
    public func readArguments<T>(_ body: (inout DBusArgumentReader) -> T) -> T {
        message.readArguments(body)
    }

    /// False when the caller flagged the call no-reply: whatever the handler returns is dropped.
    public var expectsReply: Bool { !message.noReplyExpected }

    /// Lets the connection's next method call start now, before this one is answered.
    public func begin() { gate?.open() }
}
