import CDBus

/// Reads a received message's arguments in order without building ``DBusValue`` trees, for calls that
/// arrive often (a GATT read or write).
///
/// Each accessor reads the current argument, looking through variants, and moves on to the next one;
/// it returns nil when the argument has another type. Use it only inside the closure that handed it out.
public struct DBusArgumentReader {
    private var iterator: DBusMessageIter
    private var isAtEnd: Bool

    init(message: DBusMessage) {
        iterator = DBusMessageIter()
        isAtEnd = dbus_message_iter_init(message.pointer, &iterator) == 0
    }

    private init(iterator: DBusMessageIter) {
        self.iterator = iterator
        isAtEnd = false
    }

    /// The current argument's bytes, when it is an `ay`.
    public mutating func bytes() -> [UInt8]? {
        readCurrent { iterator, type in
            guard type == DBusTypeCode.array, dbus_message_iter_get_element_type(&iterator) == DBusTypeCode.byte else { return nil }
            return DBusMessage.byteArray(&iterator)
        }
    }

    /// The current argument's text, when it is a string, object path or signature.
    public mutating func string() -> String? {
        readCurrent { iterator, type in
            guard type == DBusTypeCode.string || type == DBusTypeCode.objectPath || type == DBusTypeCode.signature else { return nil }
            return DBusMessage.text(&iterator)
        }
    }

    /// The current argument, when it is an object path.
    public mutating func objectPath() -> DBusObjectPath? {
        readCurrent { iterator, type in
            guard type == DBusTypeCode.objectPath else { return nil }
            return DBusObjectPath(DBusMessage.text(&iterator))
        }
    }

    /// The current argument, when it is an integer type (`y n q i u x t`) and fits an `Int64`.
    public mutating func integer() -> Int64? {
        readCurrent { iterator, type in
            switch type {
            case DBusTypeCode.byte: Int64(DBusMessage.basic(&iterator, UInt8(0)))
            case DBusTypeCode.int16: Int64(DBusMessage.basic(&iterator, Int16(0)))
            case DBusTypeCode.uint16: Int64(DBusMessage.basic(&iterator, UInt16(0)))
            case DBusTypeCode.int32: Int64(DBusMessage.basic(&iterator, Int32(0)))
            case DBusTypeCode.uint32: Int64(DBusMessage.basic(&iterator, UInt32(0)))
            case DBusTypeCode.int64: DBusMessage.basic(&iterator, Int64(0))
            case DBusTypeCode.uint64: Int64(exactly: DBusMessage.basic(&iterator, UInt64(0)))
            default: nil
            }
        }
    }

    /// The current argument, when it is a boolean.
    public mutating func boolean() -> Bool? {
        readCurrent { iterator, type in
            type == DBusTypeCode.boolean ? DBusMessage.basic(&iterator, UInt32(0)) != 0 : nil
        }
    }

    /// The current argument as a value, whatever its type (variants kept).
    public mutating func value() throws(DBusError) -> DBusValue {
        guard !isAtEnd, dbus_message_iter_get_arg_type(&iterator) != DBusTypeCode.invalid else {
            throw .unexpectedMessage("no argument left to read")
        }
        defer { advance() }
        return try DBusMessage.read(&iterator)
    }

    /// Calls `body` with each key and a reader at its value, when the current argument is a dictionary
    /// with string keys (`a{sv}`, `a{ss}`, …); does nothing for other types.
    public mutating func forEachEntry(_ body: (String, inout DBusArgumentReader) -> Void) {
        _ = readCurrent { iterator, type -> Void? in
            guard type == DBusTypeCode.array, dbus_message_iter_get_element_type(&iterator) == DBusTypeCode.dictionaryEntry else {
                return nil
            }
            var entries = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &entries)
            while dbus_message_iter_get_arg_type(&entries) == DBusTypeCode.dictionaryEntry {
                var entry = DBusMessageIter()
                dbus_message_iter_recurse(&entries, &entry)
                var entryReader = DBusArgumentReader(iterator: entry)
                if let key = entryReader.string() { body(key, &entryReader) }
                dbus_message_iter_next(&entries)
            }
            return ()
        }
    }

    /// Runs `read` on the current argument with variants looked through, then moves to the next argument.
    private mutating func readCurrent<T>(_ read: (inout DBusMessageIter, Int32) -> T?) -> T? {
        guard !isAtEnd else { return nil }
        defer { advance() }
        var current = iterator
        var type = dbus_message_iter_get_arg_type(&current)
        while type == DBusTypeCode.variant {
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&current, &inner)
            current = inner
            type = dbus_message_iter_get_arg_type(&current)
        }
        return type == DBusTypeCode.invalid ? nil : read(&current, type)
    }

    private mutating func advance() {
        if dbus_message_iter_next(&iterator) == 0 { isAtEnd = true }
    }
}

extension DBusMessage {
    /// Reads the arguments with `body`; the message stays alive while the reader is in use.
    func readArguments<T>(_ body: (inout DBusArgumentReader) -> T) -> T {
        withExtendedLifetime(self) {
            var reader = DBusArgumentReader(message: self)
            return body(&reader)
        }
    }
}
