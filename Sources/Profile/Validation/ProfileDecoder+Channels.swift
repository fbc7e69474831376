import JSON

extension ProfileDecoder {
    static let channelKeys = ["id", "psm", "mtu", "security", "publish", "maximumOpen", "description"]

    mutating func channel(_ node: JSONNode, _ path: String) -> ChannelDefinition? {
        guard members(node, path, allowed: Self.channelKeys) != nil else { return nil }
        documentation(node, path)
        func sub(_ key: String) -> String { JSONPath.appending(key, to: path) }
        let id = required(node, "id", path).flatMap { identifier($0, sub("id")) }
        var psm: ChannelDefinition.PSM?
        if let psmNode = required(node, "psm", path) {
            if case .string(let text) = psmNode.value, text == "any" {
                psm = .any
            } else if let value = flexibleInteger(psmNode, sub("psm"), in: 0...0xFFFF) {
                psm = channelPSM(value, psmNode, sub("psm"))
            }
        }
        guard let id, let psm else { return nil }
        var channel = ChannelDefinition(id: id, psm: psm, path: path)
        if let mtu = node["mtu"], let value = integer(mtu, sub("mtu"), in: ChannelDefinition.mtus) { channel.mtu = value }
        if let security = node["security"], let text = string(security, sub("security")) {
            if let level = ChannelSecurity(rawValue: text) {
                channel.security = level
            } else {
                let names = ChannelSecurity.allCases.map(\.rawValue)
                error(
                    security, sub("security"), "unknown channel security \"\(text)\"",
                    hint: Suggestions.hint(for: text, in: names) ?? "use " + names.map { "\"\($0)\"" }.joined(separator: ", "))
            }
        }
        if let publish = node["publish"] { channel.publish = serviceID(publish, sub("publish")) }
        if let open = node["maximumOpen"], let value = integer(open, sub("maximumOpen"), in: ChannelDefinition.maximumOpenRange) {
            channel.maximumOpen = value
        }
        channel.description = node["description"].flatMap { string($0, sub("description")) }
        return channel
    }

    /// A fixed PSM: an LE one, not bluetoothd's own.
    private mutating func channelPSM(_ value: Int, _ node: JSONNode, _ path: String) -> ChannelDefinition.PSM? {
        let range = ChannelDefinition.psms
        guard range.contains(UInt16(clamping: value)) else {
            error(
                node, path, "PSM \(value) is not an LE PSM",
                hint: "LE credit-based channels use 0x0080–0x00FF (0x0001–0x007F are the Bluetooth SIG's); or write \"any\"")
            return nil
        }
        if value == Int(ChannelDefinition.eattPSM) {
            error(node, path, "PSM 0x0027 is bluetoothd's own (EATT)", hint: "use one of 0x0080–0x00FF, or \"any\"")
            return nil
        }
        return .fixed(UInt16(value))
    }
}
