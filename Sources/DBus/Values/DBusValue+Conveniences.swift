extension DBusValue {
    /// An `as` array.
    public static func strings(_ values: [String]) -> DBusValue {
        .array(element: .string, values.map(DBusValue.string))
    }

    /// An `ao` array.
    public static func objectPaths(_ values: [DBusObjectPath]) -> DBusValue {
        .array(element: .objectPath, values.map(DBusValue.objectPath))
    }

    /// An `a{sv}` dictionary, keys sorted so the encoding is deterministic.
    public static func stringVariantDictionary(_ values: [String: DBusValue]) -> DBusValue {
        .dictionary(
            key: .string, value: .variant,
            values.sorted { $0.key < $1.key }.map { DBusDictionaryEntry(key: .string($0.key), value: .variant($0.value)) }
        )
    }

    /// A dictionary of byte strings in variants (`a{qv}`, `a{sv}`, `a{yv}`: BlueZ's ManufacturerData,
    /// ServiceData, AdvertisingData), keys sorted so the encoding is deterministic.
    public static func variantBytesDictionary<Key: Comparable>(
        _ values: [Key: [UInt8]], key signature: DBusSignature, _ key: (Key) -> DBusValue
    ) -> DBusValue {
        .dictionary(
            key: signature, value: .variant,
            values.sorted { $0.key < $1.key }.map {
                DBusDictionaryEntry(key: key($0.key), value: .variant(.bytes($0.value)))
            })
    }

    /// The value inside any number of variant wrappers.
    public var unwrappingVariants: DBusValue {
        if case .variant(let inner) = self { return inner.unwrappingVariants }
        return self
    }

    public var string: String? {
        switch unwrappingVariants {
        case .string(let value): value
        case .objectPath(let value): value.rawValue
        case .signature(let value): value.rawValue
        default: nil
        }
    }

    public var objectPath: DBusObjectPath? {
        if case .objectPath(let value) = unwrappingVariants { return value }
        return nil
    }

    public var boolean: Bool? {
        if case .boolean(let value) = unwrappingVariants { return value }
        return nil
    }

    /// Any integer type widened to `Int64` (`uint64` values above `Int64.max` give nil).
    public var integer: Int64? {
        switch unwrappingVariants {
        case .byte(let value): Int64(value)
        case .int16(let value): Int64(value)
        case .uint16(let value): Int64(value)
        case .int32(let value): Int64(value)
        case .uint32(let value): Int64(value)
        case .int64(let value): value
        case .uint64(let value): Int64(exactly: value)
        default: nil
        }
    }

    /// The bytes of an `ay` value.
    public var bytes: [UInt8]? {
        switch unwrappingVariants {
        case .bytes(let value): return value
        case .array(_, let elements):
            var result: [UInt8] = []
            for element in elements {
                guard case .byte(let byte) = element else { return nil }
                result.append(byte)
            }
            return result
        default: return nil
        }
    }

    public var unixFD: DBusFileDescriptor? {
        if case .unixFD(let value) = unwrappingVariants { return value }
        return nil
    }

    /// The elements of any array (bytes become `.byte` values).
    public var arrayElements: [DBusValue]? {
        switch unwrappingVariants {
        case .array(_, let elements): elements
        case .bytes(let bytes): bytes.map(DBusValue.byte)
        default: nil
        }
    }

    /// An object manager's `GetManagedObjects` answer (`a{oa{sa{sv}}}`): each object's interfaces with their
    /// properties; entries of other shapes are skipped. Nil when this is not a dictionary.
    public var managedObjects: [DBusObjectPath: [String: [String: DBusValue]]]? {
        guard case .dictionary(_, _, let entries) = unwrappingVariants else { return nil }
        var objects: [DBusObjectPath: [String: [String: DBusValue]]] = [:]
        for entry in entries {
            guard let path = entry.key.objectPath, case .dictionary(_, _, let interfaces) = entry.value else { continue }
            var byInterface: [String: [String: DBusValue]] = [:]
            for interface in interfaces {
                guard let name = interface.key.string else { continue }
                byInterface[name] = interface.value.stringKeyedDictionary ?? [:]
            }
            objects[path] = byInterface
        }
        return objects
    }

    /// The entries of a dictionary whose keys are strings or object paths, values unwrapped from variants.
    public var stringKeyedDictionary: [String: DBusValue]? {
        guard case .dictionary(_, _, let entries) = unwrappingVariants else { return nil }
        var result: [String: DBusValue] = [:]
        for entry in entries {
            guard let key = entry.key.string else { return nil }
            result[key] = entry.value.unwrappingVariants
        }
        return result
    }
}
