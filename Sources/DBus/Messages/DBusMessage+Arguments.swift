import CDBus

/// D-Bus type codes as libdbus's `int` type codes.
enum DBusTypeCode {
    static let invalid: Int32 = 0
    static let byte = Int32(UInt8(ascii: "y"))
    static let boolean = Int32(UInt8(ascii: "b"))
    static let int16 = Int32(UInt8(ascii: "n"))
    static let uint16 = Int32(UInt8(ascii: "q"))
    static let int32 = Int32(UInt8(ascii: "i"))
    static let uint32 = Int32(UInt8(ascii: "u"))
    static let int64 = Int32(UInt8(ascii: "x"))
    static let uint64 = Int32(UInt8(ascii: "t"))
    static let double = Int32(UInt8(ascii: "d"))
    static let string = Int32(UInt8(ascii: "s"))
    static let objectPath = Int32(UInt8(ascii: "o"))
    static let signature = Int32(UInt8(ascii: "g"))
    static let unixFD = Int32(UInt8(ascii: "h"))
    static let array = Int32(UInt8(ascii: "a"))
    static let structure = Int32(UInt8(ascii: "r"))
    static let variant = Int32(UInt8(ascii: "v"))
    static let dictionaryEntry = Int32(UInt8(ascii: "e"))
}

func dbusSignatureValidate(_ signature: UnsafePointer<CChar>) -> Bool {
    dbus_signature_validate(signature, nil) != 0
}

func dbusObjectPathValidate(_ path: UnsafePointer<CChar>) -> Bool {
    dbus_validate_path(path, nil) != 0
}

extension DBusMessage {
    /// Appends `values` as the message's arguments.
    func append(_ values: [DBusValue]) throws(DBusError) {
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(pointer, &iterator)
        for value in values {
            try Self.append(value, to: &iterator)
        }
    }

    /// Decodes every argument of the message.
    func arguments() throws(DBusError) -> [DBusValue] {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(pointer, &iterator) != 0 else { return [] }
        return try Self.readAll(&iterator)
    }

    private static func readAll(_ iterator: inout DBusMessageIter) throws(DBusError) -> [DBusValue] {
        var values: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&iterator) != DBusTypeCode.invalid {
            values.append(try read(&iterator))
            dbus_message_iter_next(&iterator)
        }
        return values
    }

    static func basic<T>(_ iterator: inout DBusMessageIter, _ initial: T) -> T {
        var value = initial
        withUnsafeMutablePointer(to: &value) { dbus_message_iter_get_basic(&iterator, $0) }
        return value
    }

    /// The string, object path or signature at `iterator`, copied out of the message.
    static func text(_ iterator: inout DBusMessageIter) -> String {
        basic(&iterator, UnsafePointer<CChar>?.none).map { String(cString: $0) } ?? ""
    }

    static func read(_ iterator: inout DBusMessageIter) throws(DBusError) -> DBusValue {
        let type = dbus_message_iter_get_arg_type(&iterator)
        switch type {
        case DBusTypeCode.byte: return .byte(basic(&iterator, UInt8(0)))
        case DBusTypeCode.boolean: return .boolean(basic(&iterator, UInt32(0)) != 0)
        case DBusTypeCode.int16: return .int16(basic(&iterator, Int16(0)))
        case DBusTypeCode.uint16: return .uint16(basic(&iterator, UInt16(0)))
        case DBusTypeCode.int32: return .int32(basic(&iterator, Int32(0)))
        case DBusTypeCode.uint32: return .uint32(basic(&iterator, UInt32(0)))
        case DBusTypeCode.int64: return .int64(basic(&iterator, Int64(0)))
        case DBusTypeCode.uint64: return .uint64(basic(&iterator, UInt64(0)))
        case DBusTypeCode.double: return .double(basic(&iterator, Double(0)))
        case DBusTypeCode.string, DBusTypeCode.objectPath, DBusTypeCode.signature:
            let text = text(&iterator)
            if type == DBusTypeCode.string { return .string(text) }
            if type == DBusTypeCode.objectPath { return .objectPath(DBusObjectPath(text)) }
            return .signature(DBusSignature(text))
        case DBusTypeCode.unixFD:
            // libdbus hands out a dup() that the caller owns.
            return .unixFD(DBusFileDescriptor(owning: basic(&iterator, Int32(-1))))
        case DBusTypeCode.variant:
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            return .variant(try read(&inner))
        case DBusTypeCode.structure:
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            return .structure(try readAll(&inner))
        case DBusTypeCode.array:
            return try readArray(&iterator)
        default:
            throw .unexpectedMessage("unknown type code \(type)")
        }
    }

    private static func readArray(_ iterator: inout DBusMessageIter) throws(DBusError) -> DBusValue {
        let elementType = dbus_message_iter_get_element_type(&iterator)
        if elementType == DBusTypeCode.byte { return .bytes(byteArray(&iterator)) }
        var inner = DBusMessageIter()
        dbus_message_iter_recurse(&iterator, &inner)
        if elementType == DBusTypeCode.dictionaryEntry {
            let (key, value) = dictionarySignatures(&iterator, entries: inner)
            var entries: [DBusDictionaryEntry] = []
            while dbus_message_iter_get_arg_type(&inner) != DBusTypeCode.invalid {
                var entry = DBusMessageIter()
                dbus_message_iter_recurse(&inner, &entry)
                let entryKey = try read(&entry)
                guard dbus_message_iter_next(&entry) != 0 else { throw .unexpectedMessage("dictionary entry without a value") }
                entries.append(DBusDictionaryEntry(key: entryKey, value: try read(&entry)))
                guard dbus_message_iter_next(&entry) == 0 else { throw .unexpectedMessage("dictionary entry with more than two fields") }
                dbus_message_iter_next(&inner)
            }
            return .dictionary(key: key, value: value, entries)
        }
        let element = singleCodeSignature(elementType) ?? DBusSignature(String(currentSignature(&iterator).rawValue.dropFirst()))
        return .array(element: element, try readAll(&inner))
    }

    /// The bytes of the `ay` at `iterator`, copied out of the message in one go.
    static func byteArray(_ iterator: inout DBusMessageIter) -> [UInt8] {
        var inner = DBusMessageIter()
        dbus_message_iter_recurse(&iterator, &inner)
        var base: UnsafeMutableRawPointer?
        var count: Int32 = 0
        withUnsafeMutablePointer(to: &base) { dbus_message_iter_get_fixed_array(&inner, $0, &count) }
        guard let base, count > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: base, count: Int(count)))
    }

    /// The signature of a type that is one code (`s`, `v`, `u`, …), without asking libdbus (which allocates
    /// a copy); nil for arrays and structures.
    private static func singleCodeSignature(_ type: Int32) -> DBusSignature? {
        guard type != DBusTypeCode.array, type != DBusTypeCode.structure, type != DBusTypeCode.dictionaryEntry,
            type != DBusTypeCode.invalid, let code = UnicodeScalar(UInt32(type))
        else { return nil }
        return DBusSignature(String(Character(code)))
    }

    /// The key and value signatures of the dictionary at `iterator` (`entries` is its content): read off the
    /// first entry when its value is one code (`a{sv}`, `a{qv}`, …), else from libdbus.
    private static func dictionarySignatures(_ iterator: inout DBusMessageIter, entries: DBusMessageIter) -> (DBusSignature, DBusSignature)
    {
        var entries = entries
        if dbus_message_iter_get_arg_type(&entries) == DBusTypeCode.dictionaryEntry {
            var entry = DBusMessageIter()
            dbus_message_iter_recurse(&entries, &entry)
            let keyType = dbus_message_iter_get_arg_type(&entry)
            dbus_message_iter_next(&entry)
            if let key = singleCodeSignature(keyType), let value = singleCodeSignature(dbus_message_iter_get_arg_type(&entry)) {
                return (key, value)
            }
        }
        // a{KV}: the key is one basic type code, the value is the rest before "}".
        let signature = currentSignature(&iterator).rawValue
        let body = signature.dropFirst(2).dropLast()
        return (DBusSignature(String(body.prefix(1))), DBusSignature(String(body.dropFirst())))
    }

    private static func currentSignature(_ iterator: inout DBusMessageIter) -> DBusSignature {
        guard let raw = dbus_message_iter_get_signature(&iterator) else { return "" }
        defer { dbus_free(raw) }
        return DBusSignature(String(cString: raw))
    }

    // MARK: Writing

    private static func appendBasic<T>(_ type: Int32, _ value: T, to iterator: inout DBusMessageIter) throws(DBusError) {
        var copy = value
        let appended = withUnsafePointer(to: &copy) { dbus_message_iter_append_basic(&iterator, type, $0) }
        guard appended != 0 else { throw .invalidArgument("out of memory appending a value") }
    }

    private static func appendText(_ type: Int32, _ text: String, to iterator: inout DBusMessageIter) throws(DBusError) {
        guard !text.utf8.contains(0) else { throw .invalidArgument("string contains a NUL byte") }
        let appended = text.withCString { pointer in
            var cString: UnsafePointer<CChar>? = pointer
            return dbus_message_iter_append_basic(&iterator, type, &cString)
        }
        guard appended != 0 else { throw .invalidArgument("out of memory appending a string") }
    }

    private static func openContainer(
        _ type: Int32, _ signature: DBusSignature?, parent: inout DBusMessageIter,
        body: (inout DBusMessageIter) throws(DBusError) -> Void
    ) throws(DBusError) {
        var inner = DBusMessageIter()
        let opened: UInt32
        if let signature {
            opened = signature.rawValue.withCString { dbus_message_iter_open_container(&parent, type, $0, &inner) }
        } else {
            opened = dbus_message_iter_open_container(&parent, type, nil, &inner)
        }
        guard opened != 0 else { throw .invalidArgument("cannot open container \(signature?.rawValue ?? "")") }
        do {
            try body(&inner)
        } catch {
            dbus_message_iter_abandon_container(&parent, &inner)
            throw error
        }
        guard dbus_message_iter_close_container(&parent, &inner) != 0 else {
            throw .invalidArgument("out of memory closing a container")
        }
    }

    static func append(_ value: DBusValue, to iterator: inout DBusMessageIter) throws(DBusError) {
        switch value {
        case .byte(let value): try appendBasic(DBusTypeCode.byte, value, to: &iterator)
        case .boolean(let value): try appendBasic(DBusTypeCode.boolean, UInt32(value ? 1 : 0), to: &iterator)
        case .int16(let value): try appendBasic(DBusTypeCode.int16, value, to: &iterator)
        case .uint16(let value): try appendBasic(DBusTypeCode.uint16, value, to: &iterator)
        case .int32(let value): try appendBasic(DBusTypeCode.int32, value, to: &iterator)
        case .uint32(let value): try appendBasic(DBusTypeCode.uint32, value, to: &iterator)
        case .int64(let value): try appendBasic(DBusTypeCode.int64, value, to: &iterator)
        case .uint64(let value): try appendBasic(DBusTypeCode.uint64, value, to: &iterator)
        case .double(let value): try appendBasic(DBusTypeCode.double, value, to: &iterator)
        case .string(let text): try appendText(DBusTypeCode.string, text, to: &iterator)
        case .objectPath(let path):
            guard path.isValid else { throw .invalidArgument("bad object path \"\(path)\"") }
            try appendText(DBusTypeCode.objectPath, path.rawValue, to: &iterator)
        case .signature(let signature):
            guard signature.isValid else { throw .invalidArgument("bad signature \"\(signature)\"") }
            try appendText(DBusTypeCode.signature, signature.rawValue, to: &iterator)
        case .unixFD(let descriptor):
            // libdbus duplicates the descriptor; ours stays owned by `descriptor`.
            let raw = descriptor.rawValue
            guard raw >= 0 else { throw .invalidArgument("file descriptor was already taken") }
            try appendBasic(DBusTypeCode.unixFD, raw, to: &iterator)
        case .bytes(let bytes):
            try openContainer(DBusTypeCode.array, .byte, parent: &iterator) { (inner: inout DBusMessageIter) throws(DBusError) in
                let appended = bytes.withUnsafeBufferPointer { buffer in
                    var base: UnsafePointer<UInt8>? = buffer.baseAddress
                    return dbus_message_iter_append_fixed_array(&inner, DBusTypeCode.byte, &base, Int32(buffer.count))
                }
                guard appended != 0 else { throw .invalidArgument("out of memory appending bytes") }
            }
        case .array(let element, let elements):
            guard element.isValid, !element.rawValue.hasPrefix("{") else {
                throw .invalidArgument("bad array element signature \"\(element)\"")
            }
            try openContainer(DBusTypeCode.array, element, parent: &iterator) { (inner: inout DBusMessageIter) throws(DBusError) in
                for item in elements {
                    guard item.signature == element else {
                        throw .invalidArgument("array of \(element) holds a \(item.signature)")
                    }
                    try append(item, to: &inner)
                }
            }
        case .dictionary(let key, let valueSignature, let entries):
            let entrySignature = DBusSignature("{" + key.rawValue + valueSignature.rawValue + "}")
            guard DBusSignature.dictionary(key: key, value: valueSignature).isValid else {
                throw .invalidArgument("bad dictionary signature \(entrySignature)")
            }
            try openContainer(DBusTypeCode.array, entrySignature, parent: &iterator) { (inner: inout DBusMessageIter) throws(DBusError) in
                for entry in entries {
                    guard entry.key.signature == key, entry.value.signature == valueSignature else {
                        throw .invalidArgument("dictionary \(entrySignature) holds {\(entry.key.signature)\(entry.value.signature)}")
                    }
                    try openContainer(DBusTypeCode.dictionaryEntry, nil, parent: &inner) {
                        (pair: inout DBusMessageIter) throws(DBusError) in
                        try append(entry.key, to: &pair)
                        try append(entry.value, to: &pair)
                    }
                }
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw .invalidArgument("empty structure") }
            try openContainer(DBusTypeCode.structure, nil, parent: &iterator) { (inner: inout DBusMessageIter) throws(DBusError) in
                for field in fields { try append(field, to: &inner) }
            }
        case .variant(let inner):
            try openContainer(DBusTypeCode.variant, inner.signature, parent: &iterator) {
                (content: inout DBusMessageIter) throws(DBusError) in
                try append(inner, to: &content)
            }
        }
    }
}
