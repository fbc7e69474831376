import CDBus

/// Owns one libdbus message (`DBusMessage*`).
///
/// `@unchecked Sendable`: libdbus reference counts messages atomically, and a message is only mutated
/// while it is built, before it is shared; received messages are only read.
final class DBusMessage: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes over one reference to `pointer`.
    init(taking pointer: OpaquePointer) { self.pointer = pointer }

    /// Adds a reference to `pointer`.
    init(retaining pointer: OpaquePointer) {
        dbus_message_ref(pointer)
        self.pointer = pointer
    }

    deinit { dbus_message_unref(pointer) }

    static func methodCall(
        destination: String?, path: DBusObjectPath, interface: String?, member: String
    ) throws(DBusError) -> DBusMessage {
        guard path.isValid else { throw .invalidArgument("bad object path \"\(path)\"") }
        guard let message = dbus_message_new_method_call(destination, path.rawValue, interface, member) else {
            throw .invalidArgument("cannot build a call to \(interface ?? "").\(member)")
        }
        return DBusMessage(taking: message)
    }

    static func signal(path: DBusObjectPath, interface: String, member: String) throws(DBusError) -> DBusMessage {
        guard path.isValid else { throw .invalidArgument("bad object path \"\(path)\"") }
        guard let message = dbus_message_new_signal(path.rawValue, interface, member) else {
            throw .invalidArgument("cannot build signal \(interface).\(member)")
        }
        return DBusMessage(taking: message)
    }

    func methodReturn() throws(DBusError) -> DBusMessage {
        guard let message = dbus_message_new_method_return(pointer) else {
            throw .invalidArgument("cannot build a method return")
        }
        return DBusMessage(taking: message)
    }

    func errorReply(name: String, message text: String) throws(DBusError) -> DBusMessage {
        guard let message = dbus_message_new_error(pointer, name, text) else {
            throw .invalidArgument("cannot build error reply \(name)")
        }
        return DBusMessage(taking: message)
    }

    var type: Int32 { dbus_message_get_type(pointer) }
    var isMethodCall: Bool { type == DBusMessageType.methodCall }
    var isSignal: Bool { type == DBusMessageType.signal }
    var isError: Bool { type == DBusMessageType.error }

    var sender: String? { dbus_message_get_sender(pointer).map { String(cString: $0) } }
    var destination: String? { dbus_message_get_destination(pointer).map { String(cString: $0) } }
    var path: DBusObjectPath? { dbus_message_get_path(pointer).map { DBusObjectPath(String(cString: $0)) } }
    var interface: String? { dbus_message_get_interface(pointer).map { String(cString: $0) } }
    var member: String? { dbus_message_get_member(pointer).map { String(cString: $0) } }
    var errorName: String? { dbus_message_get_error_name(pointer).map { String(cString: $0) } }
    var signature: DBusSignature { DBusSignature(dbus_message_get_signature(pointer).map { String(cString: $0) } ?? "") }
    var noReplyExpected: Bool { dbus_message_get_no_reply(pointer) != 0 }
    var serial: UInt32 { dbus_message_get_serial(pointer) }

    /// The error a reply of type error carries, with its first string argument as the message.
    func asError() -> DBusError {
        let text = (try? arguments())?.first?.string ?? ""
        return .named(errorName ?? DBusError.Name.failed, message: text)
    }
}

/// libdbus message type numbers.
enum DBusMessageType {
    static let methodCall: Int32 = 1
    static let methodReturn: Int32 = 2
    static let error: Int32 = 3
    static let signal: Int32 = 4
}
