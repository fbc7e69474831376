import CDBus

/// Decoding of messages in D-Bus wire format, as they arrive from the bus.
public enum DBusMarshalling {
    /// The arguments of a marshalled message; throws for bytes libdbus does not accept as a message.
    public static func arguments(ofMarshalledMessage bytes: [UInt8]) throws(DBusError) -> [DBusValue] {
        try message(demarshalling: bytes).arguments()
    }

    /// Reads the arguments of a marshalled message with `body`, as method handlers read theirs with
    /// ``DBusMethodCall/readArguments(_:)``; throws for bytes libdbus does not accept as a message.
    public static func readArguments<T>(ofMarshalledMessage bytes: [UInt8], _ body: (inout DBusArgumentReader) -> T) throws(DBusError) -> T
    {
        try message(demarshalling: bytes).readArguments(body)
    }

    private static func message(demarshalling bytes: [UInt8]) throws(DBusError) -> DBusMessage {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let message = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { dbus_message_demarshal($0.baseAddress, Int32(clamping: $0.count), &error) }
        }
        guard let message else { throw .unexpectedMessage(DBusConnection.message(of: error)) }
        return DBusMessage(taking: message)
    }

    /// A method call with `arguments`, marshalled to wire format (for tests and fuzz seeds).
    public static func marshalledMethodCall(member: String, arguments: [DBusValue]) throws(DBusError) -> [UInt8] {
        let message = try DBusMessage.methodCall(destination: "org.example", path: "/", interface: "org.example.Fuzz", member: member)
        try message.append(arguments)
        dbus_message_set_serial(message.pointer, 1)
        var buffer: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        guard dbus_message_marshal(message.pointer, &buffer, &length) != 0, let buffer else {
            throw .invalidArgument("cannot marshal the message")
        }
        defer { dbus_free(buffer) }
        return buffer.withMemoryRebound(to: UInt8.self, capacity: Int(length)) { Array(UnsafeBufferPointer(start: $0, count: Int(length))) }
    }
}
