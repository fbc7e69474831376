import JSON
import McuMgr

extension ProfileDecoder {
    mutating func firmware(_ node: JSONNode, _ path: String) -> FirmwareDefinition? {
        let allowed = [
            "$comment", "description", "characteristic", "version", "revision", "bootTime", "bufferSize", "bufferCount", "slotSize",
            "services", "serviceChanged",
        ]
        guard members(node, path, allowed: allowed) != nil else { return nil }
        func sub(_ key: String) -> String { JSONPath.appending(key, to: path) }
        let characteristic = required(node, "characteristic", path).flatMap { characteristicID($0, sub("characteristic")) }
        let version = required(node, "version", path).flatMap { imageVersion($0, sub("version")) }
        guard let characteristic, let version else { return nil }
        var firmware = FirmwareDefinition(characteristic: characteristic, version: version)
        firmware.path = path
        if let revision = node["revision"] { firmware.revision = characteristicID(revision, sub("revision")) }
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
        if let services = node["services"], let items = array(services, sub("services")) {
            firmware.services = items.enumerated().compactMap { index, item in
                versionedService(item, JSONPath.appending(index, to: sub("services")))
            }
        }
        if let serviceChanged = node["serviceChanged"], let value = bool(serviceChanged, sub("serviceChanged")), !value {
            error(
                serviceChanged, sub("serviceChanged"),
                "a reboot into a changed table without Service Changed cannot be emulated on BlueZ",
                hint:
                    "the Service Changed characteristic is bluetoothd's own: it indicates every change of the table to each bonded central that enabled it, as that central reconnects (docs/firmware.md); leave serviceChanged out or true"
            )
        }
        return firmware
    }

    /// `firmware.services[i]`: `{"service": ID, "from": VERSION, "before": VERSION}`, a bound at least.
    private mutating func versionedService(_ node: JSONNode, _ path: String) -> VersionedService? {
        guard members(node, path, allowed: ["$comment", "service", "from", "before"]) != nil else { return nil }
        func sub(_ key: String) -> String { JSONPath.appending(key, to: path) }
        guard let service = required(node, "service", path).flatMap({ serviceID($0, sub("service")) }) else { return nil }
        var entry = VersionedService(service: service, path: path)
        if let from = node["from"] { entry.from = imageVersion(from, sub("from")) }
        if let before = node["before"] { entry.before = imageVersion(before, sub("before")) }
        if node["from"] == nil, node["before"] == nil {
            error(
                node, path, "service \"\(service)\" names no version",
                hint: "give \"from\" (the first version that has it) or \"before\" (the first that has it no more), or both")
            return nil
        }
        if let from = entry.from, let before = entry.before, from >= before {
            error(
                node, path, "service \"\(service)\" is never present: \"from\" \(from) is not before \"before\" \(before)",
                hint: "\"from\" is the first version with the service, \"before\" the first without it again")
            return nil
        }
        return entry
    }

    /// An image version, `1.2.3` or `1.2.3.4`.
    private mutating func imageVersion(_ node: JSONNode, _ path: String) -> McuBootImage.Version? {
        guard let text = string(node, path) else { return nil }
        guard let version = McuBootImage.Version(parsing: text) else {
            error(
                node, path, "\"\(text)\" is not an image version",
                hint: "write MAJOR.MINOR.REVISION or MAJOR.MINOR.REVISION.BUILD, e.g. \"1.2.3\" (0-255, 0-255, 0-65535, 0-4294967295)")
            return nil
        }
        return version
    }
}
