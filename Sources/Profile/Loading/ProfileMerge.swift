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
            for member in overrideMembers {
                if let index = members.lastIndex(where: { $0.key == member.key }) {
                    members[index] = JSONMember(
                        key: member.key, keyLocation: member.keyLocation, value: merge(members[index].value, member.value))
                } else {
                    members.append(member)
                }
            }
            return JSONNode(.object(members), at: override.location)
        case (.array(let baseItems), .array(let overrideItems)):
            guard let baseIDs = ids(of: baseItems), let overrideIDs = ids(of: overrideItems) else { return override }
            var items = baseItems
            for (id, item) in zip(overrideIDs, overrideItems) {
                if let index = baseIDs.firstIndex(of: id) {
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
