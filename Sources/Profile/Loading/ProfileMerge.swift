import JSON

/// Merges an `extends` base with the profile that extends it.
///
/// Objects merge key by key, recursively. Arrays whose items are all objects with a string `id`
/// (services, characteristics, descriptors, rules, timers) merge item by item by id, new ids appended.
/// Every other value, including other arrays, is replaced by the overriding one.
enum ProfileMerge {
    static func merge(_ base: JSONNode, _ override: JSONNode) -> JSONNode {
        switch (base.value, override.value) {
        case (.object(let baseMembers), .object(let overrideMembers)):
            var members = baseMembers
            // Where each key is (its last occurrence), so that merging is linear in the number of keys.
            var positions: [String: Int] = [:]
            for (index, member) in members.enumerated() { positions[member.key] = index }
            for member in overrideMembers {
                if let index = positions[member.key] {
                    members[index] = JSONMember(
                        key: member.key, keyLocation: member.keyLocation, value: merge(members[index].value, member.value))
                } else {
                    positions[member.key] = members.count
                    members.append(member)
                }
            }
            return JSONNode(.object(members), at: override.location)
        case (.array(let baseItems), .array(let overrideItems)):
            guard let baseIDs = ids(of: baseItems), let overrideIDs = ids(of: overrideItems) else { return override }
            var items = baseItems
            var positions: [String: Int] = [:]
            for (index, id) in baseIDs.enumerated() where positions[id] == nil { positions[id] = index }
            for (id, item) in zip(overrideIDs, overrideItems) {
                if let index = positions[id] {
                    items[index] = merge(items[index], item)
                } else {
                    items.append(item)
                }
            }
            return JSONNode(.array(items), at: override.location)
        default:
            return override
        }
    }

    /// The `id` of every item, or nil if any item is not an object with a string id.
    static func ids(of items: [JSONNode]) -> [String]? {
        var ids: [String] = []
        for item in items {
            guard let id = item["id"]?.stringValue else { return nil }
            ids.append(id)
        }
        return ids
    }
}
