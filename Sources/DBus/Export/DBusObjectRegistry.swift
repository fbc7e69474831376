/// The objects a connection exports, by path; confined to the connection's thread.
struct DBusObjectRegistry {
    struct Entry {
        var interfaces: [DBusInterface]
        var policy: DBusCallerPolicy
    }

    var objects: [DBusObjectPath: Entry] = [:]
    var managers: [DBusObjectPath: DBusCallerPolicy] = [:]

    /// The object manager paths that `path` lies strictly below.
    func managers(above path: DBusObjectPath) -> [DBusObjectPath] {
        managers.keys.filter { $0 != path && path.isDescendant(of: $0) }.sorted()
    }

    /// The exported objects strictly below `manager`, with their interfaces' property values.
    func managedObjects(below manager: DBusObjectPath) -> DBusValue {
        let entries = objects.filter { $0.key != manager && $0.key.isDescendant(of: manager) }
            .sorted { $0.key < $1.key }
            .map { path, entry in
                DBusDictionaryEntry(key: .objectPath(path), value: Self.interfacesAndProperties(entry.interfaces))
            }
        return .dictionary(key: .objectPath, value: "a{sa{sv}}", entries)
    }

    static func interfacesAndProperties(_ interfaces: [DBusInterface]) -> DBusValue {
        .dictionary(
            key: .string, value: .stringVariantDictionary,
            interfaces.map { interface in
                DBusDictionaryEntry(key: .string(interface.name), value: .stringVariantDictionary(interface.propertyValues()))
            })
    }

    /// The names of the nodes directly below `path`, for introspection.
    func childNodes(of path: DBusObjectPath) -> [String] {
        let prefix = path.rawValue == "/" ? "/" : path.rawValue + "/"
        var names = Set<String>()
        for candidate in objects.keys.map(\.rawValue) + managers.keys.map(\.rawValue) where candidate.hasPrefix(prefix) {
            if let first = candidate.dropFirst(prefix.count).split(separator: "/").first { names.insert(String(first)) }
        }
        return names.sorted()
    }
}
