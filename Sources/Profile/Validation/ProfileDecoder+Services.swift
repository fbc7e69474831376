import Bluetooth
import JSON

extension ProfileDecoder {
    mutating func service(_ node: JSONNode, _ path: String) -> ServiceDefinition? {
        guard
            members(node, path, allowed: ["id", "uuid", "primary", "includes", "characteristics", "description", "handle", "present"])
                != nil
        else { return nil }
        documentation(node, path)
        func sub(_ key: String) -> String { JSONPath.appending(key, to: path) }
        let id = required(node, "id", path).flatMap { identifier($0, sub("id")) }
        let uuidValue = required(node, "uuid", path).flatMap { self.uuid($0, sub("uuid")) }
        var service = ServiceDefinition(
            id: id ?? "", uuid: uuidValue ?? BluetoothUUID(0), primary: true, includes: [], characteristics: [], handle: nil, path: path)
        if let primary = node["primary"] { service.primary = bool(primary, sub("primary")) ?? true }
        if let present = node["present"] { service.present = bool(present, sub("present")) ?? true }
        if let handle = node["handle"] { service.handle = attributeHandle(handle, sub("handle")) }
        if let includes = node["includes"], let items = array(includes, sub("includes")) {
            service.includes = items.enumerated().compactMap { serviceID($1, JSONPath.appending($0, to: sub("includes"))) }
        }
        if let characteristics = node["characteristics"], let items = array(characteristics, sub("characteristics")) {
            service.characteristics = items.enumerated().compactMap {
                characteristic($1, JSONPath.appending($0, to: sub("characteristics")))
            }
        }
        guard id != nil, uuidValue != nil else { return nil }
        return service
    }

    mutating func characteristic(_ node: JSONNode, _ path: String) -> CharacteristicDefinition? {
        guard
            members(
                node, path,
                allowed: [
                    "id", "uuid", "flags", "value", "maxLength", "storeWrites", "descriptors", "description", "handle", "fragment",
                    "frames",
                ]) != nil
        else { return nil }
        func sub(_ key: String) -> String { JSONPath.appending(key, to: path) }
        let id = required(node, "id", path).flatMap { identifier($0, sub("id")) }
        let uuidValue = required(node, "uuid", path).flatMap { self.uuid($0, sub("uuid")) }
        var flags: [CharacteristicFlag] = []
        if let flagsNode = required(node, "flags", path), let items = array(flagsNode, sub("flags")) {
            if items.isEmpty { error(flagsNode, sub("flags"), "a characteristic needs at least one flag") }
            for (index, item) in items.enumerated() {
                let itemPath = JSONPath.appending(index, to: sub("flags"))
                guard let text = string(item, itemPath) else { continue }
                guard let flag = CharacteristicFlag(rawValue: text) else {
                    error(
                        item, itemPath, "unknown flag \"\(text)\"",
                        hint: Suggestions.hint(for: text, in: CharacteristicFlag.allCases.map(\.rawValue)))
                    continue
                }
                if flags.contains(flag) {
                    error(item, itemPath, "duplicate flag \"\(text)\"")
                } else {
                    flags.append(flag)
                }
            }
        }
        var definition = CharacteristicDefinition(
            id: CharacteristicID(id ?? ""), uuid: uuidValue ?? BluetoothUUID(0), flags: flags, value: .empty, maxLength: nil,
            storeWrites: nil,
            descriptors: [], description: nil, handle: nil, path: path)
        if let value = node["value"] {
            definition.value = valueSource(value, sub("value"), usage: .initialValue) ?? .empty
        }
        if let maxLength = node["maxLength"] {
            definition.maxLength = integer(maxLength, sub("maxLength"), in: 1...TemplateBuiltins.maximumLength)
        }
        if let storeWrites = node["storeWrites"] { definition.storeWrites = bool(storeWrites, sub("storeWrites")) }
        if let fragment = node["fragment"], let value = bool(fragment, sub("fragment")) {
            definition.fragment = value
            if value, !flags.contains(.notify), !flags.contains(.indicate) {
                error(
                    fragment, sub("fragment"), "\"fragment\" is about notifications and indications",
                    hint: "give the characteristic the notify or indicate flag, or leave \"fragment\" out")
            }
        }
        if let frames = node["frames"] {
            definition.frames = frameFormat(frames, sub("frames"))
            if !flags.contains(.write), !flags.contains(.writeWithoutResponse) {
                error(
                    frames, sub("frames"), "\"frames\" is about writes",
                    hint: "give the characteristic the write or write-without-response flag, or leave \"frames\" out")
            }
        }
        if let handle = node["handle"] { definition.handle = attributeHandle(handle, sub("handle")) }
        if let description = node["description"] { definition.description = string(description, sub("description")) }
        if let descriptors = node["descriptors"], let items = array(descriptors, sub("descriptors")) {
            definition.descriptors = items.enumerated().compactMap {
                descriptor($1, JSONPath.appending($0, to: sub("descriptors")), owner: id ?? "", index: $0)
            }
        }
        guard id != nil, uuidValue != nil else { return nil }
        return definition
    }

    /// `"frames": {"lengthOffset": 2, "lengthSize": 2, "headerSize": 4, "start": ["0x81", "0xC1"]}`.
    mutating func frameFormat(_ node: JSONNode, _ path: String) -> FrameFormat? {
        guard members(node, path, allowed: ["lengthOffset", "lengthSize", "headerSize", "start"]) != nil else { return nil }
        func sub(_ key: String) -> String { JSONPath.appending(key, to: path) }
        let offset = required(node, "lengthOffset", path).flatMap { integer($0, sub("lengthOffset"), in: 0...32) }
        let size = required(node, "lengthSize", path).flatMap { integer($0, sub("lengthSize"), in: 1...2) }
        let header = required(node, "headerSize", path).flatMap { integer($0, sub("headerSize"), in: 1...64) }
        var start: [UInt8] = []
        if let startNode = node["start"], let items = array(startNode, sub("start")) {
            start = items.enumerated().compactMap {
                flexibleInteger($1, JSONPath.appending($0, to: sub("start")), in: 0...255).map(UInt8.init)
            }
        }
        guard let offset, let size, let header else { return nil }
        if offset + size > header, let headerNode = node["headerSize"] {
            error(
                headerNode, sub("headerSize"),
                "the header (\(header) bytes) must hold the length field (bytes \(offset)..<\(offset + size))")
            return nil
        }
        return FrameFormat(lengthOffset: offset, lengthSize: size, headerSize: header, start: start)
    }

    static let descriptorTypes = ["user-description", "presentation-format"]

    /// A custom descriptor (`uuid`, `flags`, `value`) or a typed one: `user-description` with `text`,
    /// `presentation-format` with `format`, `exponent`, `unit`, `namespace`, `description`.
    mutating func descriptor(_ node: JSONNode, _ path: String, owner: String, index: Int) -> DescriptorDefinition? {
        guard
            members(
                node, path,
                allowed: [
                    "id", "uuid", "type", "flags", "value", "text", "format", "exponent", "unit", "namespace", "description", "handle",
                ]) != nil
        else { return nil }
        func sub(_ key: String) -> String { JSONPath.appending(key, to: path) }
        var definition = DescriptorDefinition(
            id: "\(owner)-descriptor\(index)", uuid: BluetoothUUID(0), flags: [.read], value: .empty, handle: nil, path: path)
        if let id = node["id"] { definition.id = identifier(id, sub("id")) ?? definition.id }
        if let handle = node["handle"] { definition.handle = attributeHandle(handle, sub("handle")) }
        if let flagsNode = node["flags"], let items = array(flagsNode, sub("flags")) {
            definition.flags = []
            for (index, item) in items.enumerated() {
                let itemPath = JSONPath.appending(index, to: sub("flags"))
                guard let text = string(item, itemPath) else { continue }
                if let flag = DescriptorFlag(rawValue: text) {
                    definition.flags.append(flag)
                } else {
                    error(
                        item, itemPath, "unknown descriptor flag \"\(text)\"",
                        hint: Suggestions.hint(for: text, in: DescriptorFlag.allCases.map(\.rawValue)))
                }
            }
        }
        let typed: [String] = ["text", "format", "exponent", "unit", "namespace", "description"]
        if let typeNode = node["type"] {
            guard let type = string(typeNode, sub("type")) else { return nil }
            switch type {
            case "user-description":
                definition.uuid = .userDescription
                if let text = required(node, "text", path).flatMap({ string($0, sub("text")) }) {
                    definition.value = ValueSource(template: .literal(Array(text.utf8)))
                }
                reportMisplaced(node, path, keys: ["uuid", "value"] + typed.filter { $0 != "text" }, context: "a user-description")
            case "presentation-format":
                definition.uuid = .presentationFormat
                let format = node["format"].flatMap { flexibleInteger($0, sub("format"), in: 0...255) } ?? 0
                let exponent = node["exponent"].flatMap { integer($0, sub("exponent"), in: -128...127) } ?? 0
                let unit = node["unit"].flatMap { flexibleInteger($0, sub("unit"), in: 0...0xFFFF) } ?? 0x2700
                let namespace = node["namespace"].flatMap { flexibleInteger($0, sub("namespace"), in: 0...255) } ?? 1
                let description = node["description"].flatMap { flexibleInteger($0, sub("description"), in: 0...0xFFFF) } ?? 0
                let bytes: [UInt8] = [
                    UInt8(format), UInt8(bitPattern: Int8(exponent)), UInt8(unit & 0xFF), UInt8(unit >> 8),
                    UInt8(namespace), UInt8(description & 0xFF), UInt8(description >> 8),
                ]
                definition.value = ValueSource(template: .literal(bytes))
                reportMisplaced(node, path, keys: ["uuid", "value", "text"], context: "a presentation-format")
            default:
                error(
                    typeNode, sub("type"), "unknown descriptor type \"\(type)\"",
                    hint: Suggestions.hint(for: type, in: Self.descriptorTypes)
                        ?? "use \"user-description\", \"presentation-format\" or give a uuid")
                return nil
            }
            return definition
        }
        reportMisplaced(node, path, keys: typed, context: "a descriptor without \"type\"")
        guard let uuidValue = required(node, "uuid", path).flatMap({ self.uuid($0, sub("uuid")) }) else { return nil }
        definition.uuid = uuidValue
        if let value = node["value"] {
            definition.value = valueSource(value, sub("value"), usage: .initialValue) ?? .empty
        }
        return definition
    }

    /// An ATT handle a profile asks BlueZ for: 1…0xFFFF (BlueZ's own GAP and GATT services take the first few).
    mutating func attributeHandle(_ node: JSONNode, _ path: String) -> AttributeHandle? {
        flexibleInteger(node, path, in: 1...0xFFFF).map { AttributeHandle(rawValue: UInt16($0)) }
    }

    private mutating func reportMisplaced(_ node: JSONNode, _ path: String, keys: [String], context: String) {
        guard case .object(let members) = node.value else { return }
        for member in members where keys.contains(member.key) {
            error(
                at: member.keyLocation, JSONPath.appending(member.key, to: path),
                "\"\(member.key)\" does not apply to \(context)")
        }
    }
}
