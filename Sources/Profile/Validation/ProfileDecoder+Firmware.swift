import McuMgr

extension ProfileDecoder {
    mutating func firmware(_ node: JSONNode, _ path: String) -> FirmwareDefinition? {
        let allowed = [
            "$comment", "description", "characteristic", "version", "revision", "bootTime", "bufferSize", "bufferCount", "slotSize",
        ]
        guard members(node, path, allowed: allowed) != nil else { return nil }
        func sub(_ key: String) -> String { JSONPath.appending(key, to: path) }
        let characteristic = required(node, "characteristic", path).flatMap { identifier($0, sub("characteristic")) }
        var version: McuBootImage.Version?
        if let versionNode = required(node, "version", path), let text = string(versionNode, sub("version")) {
            version = McuBootImage.Version(parsing: text)
            if version == nil {
                error(
                    versionNode, sub("version"), "\"\(text)\" is not an image version",
                    hint: "write MAJOR.MINOR.REVISION or MAJOR.MINOR.REVISION.BUILD, e.g. \"1.2.3\" (0-255, 0-255, 0-65535, 0-4294967295)")
            }
        }
        guard let characteristic, let version else { return nil }
        var firmware = FirmwareDefinition(characteristic: characteristic, version: version)
        firmware.path = path
        if let revision = node["revision"] { firmware.revision = identifier(revision, sub("revision")) }
        if let bootTime = node["bootTime"], let duration = duration(bootTime, sub("bootTime")) { firmware.bootTime = duration }
        if let size = node["bufferSize"], let value = integer(size, sub("bufferSize"), in: FirmwareDefinition.bufferSizes) {
            firmware.bufferSize = value
        }
        if let count = node["bufferCount"], let value = integer(count, sub("bufferCount"), in: FirmwareDefinition.bufferCounts) {
            firmware.bufferCount = value
        }
        if let size = node["slotSize"], let value = integer(size, sub("slotSize"), in: FirmwareDefinition.slotSizes) {
            firmware.slotSize = value
        }
        return firmware
    }
}
