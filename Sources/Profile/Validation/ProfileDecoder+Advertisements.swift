import Bluetooth
import JSON

extension ProfileDecoder {
    static let advertisementFieldKeys = [
        "type", "localName", "serviceUUIDs", "solicitUUIDs", "manufacturerData", "serviceData", "appearance",
        "txPower", "includes", "discoverable", "minInterval", "maxInterval", "duration", "timeout", "data",
        "secondaryChannel", "scanResponse",
    ]
    static let scanResponseFieldKeys = ["serviceUUIDs", "solicitUUIDs", "manufacturerData", "serviceData", "data"]
    /// Advertising bluetoothd's `LEAdvertisement1` cannot send (it needs the controller's HCI commands), and why.
    static let advertisingNeedingHCI = [
        "periodic": "periodic advertising",
        "directed": "directed advertising",
    ]
    /// AD types other fields (or BlueZ itself) build; BlueZ refuses them in `Data`.
    static let advertisementTypesOfOtherFields = Set(AdvertisingData.typesOfDecodedFields.map(Int.init))
    static let advertisementIncludes = ["tx-power", "appearance", "local-name", "rsi"]

    mutating func device(_ node: JSONNode, _ path: String) -> DeviceDefinition {
        var device = DeviceDefinition()
        guard members(node, path, allowed: ["name", "appearance", "description"]) != nil else { return device }
        documentation(node, path)
        if let name = node["name"] {
            device.name = template(name, JSONPath.appending("name", to: path), kind: .text, usage: .advertisement)
        }
        if let appearance = node["appearance"] {
            device.appearance = flexibleInteger(appearance, JSONPath.appending("appearance", to: path), in: 0...0xFFFF)
                .map { UInt16($0) }
        }
        return device
    }

    mutating func advertisement(_ node: JSONNode, _ path: String) -> AdvertisementDefinition? {
        refuseAdvertisingNeedingHCI(node, path)
        guard
            members(node, path, allowed: Self.advertisementFieldKeys + ["id", "variants", "description"] + Self.advertisingNeedingHCI.keys)
                != nil
        else { return nil }
        documentation(node, path)
        var definition = AdvertisementDefinition(
            id: nil, fields: advertisementFields(node, path), variants: [:], path: path)
        if let id = node["id"] { definition.id = identifier(id, JSONPath.appending("id", to: path)) }
        if let variants = node["variants"] {
            let variantsPath = JSONPath.appending("variants", to: path)
            guard case .object(let members) = variants.value else {
                typeError(variants, variantsPath, expected: "an object of named variants")
                return definition
            }
            for member in members {
                let variantPath = JSONPath.appending(member.key, to: variantsPath)
                guard Self.isIdentifier(member.key) else {
                    error(at: member.keyLocation, variantPath, "\"\(member.key)\" is not a valid variant name")
                    continue
                }
                if member.key == "base" {
                    error(at: member.keyLocation, variantPath, "\"base\" is reserved for the base advertisement")
                    continue
                }
                refuseAdvertisingNeedingHCI(member.value, variantPath)
                guard
                    self.members(
                        member.value, variantPath, allowed: Self.advertisementFieldKeys + ["description"] + Self.advertisingNeedingHCI.keys)
                        != nil
                else { continue }
                documentation(member.value, variantPath)
                definition.variants[member.key] = advertisementFields(member.value, variantPath)
            }
        }
        return definition
    }

    mutating func advertisementFields(_ node: JSONNode, _ path: String) -> AdvertisementFields {
        var fields = AdvertisementFields()
        func sub(_ key: String) -> String { JSONPath.appending(key, to: path) }
        if let value = node["type"], let text = string(value, sub("type")) {
            if let type = AdvertisementType(rawValue: text) {
                fields.type = type
            } else {
                error(
                    value, sub("type"), "unknown advertisement type \"\(text)\"",
                    hint: Suggestions.hint(for: text, in: AdvertisementType.allCases.map(\.rawValue))
                        ?? "use \"peripheral\" or \"broadcast\"")
            }
        }
        if let value = node["localName"] {
            fields.localName = template(value, sub("localName"), kind: .text, usage: .advertisement)
            if fields.localName?.literalBytes?.contains(0) == true {
                error(
                    value, sub("localName"),
                    "the name holds a NUL character: bluetoothd takes names as D-Bus strings, which cannot hold one",
                    hint: "leave out the NUL padding (gattemu import and clone do)")
            }
        }
        let structures = adStructures(node, path)
        fields.serviceUUIDs = structures.serviceUUIDs
        fields.solicitUUIDs = structures.solicitUUIDs
        fields.manufacturerData = structures.manufacturerData
        fields.serviceData = structures.serviceData
        fields.data = structures.data
        if let value = node["appearance"] {
            fields.appearance = flexibleInteger(value, sub("appearance"), in: 0...0xFFFF).map { UInt16($0) }
        }
        if let value = node["txPower"] { fields.txPower = integer(value, sub("txPower"), in: -127...20) }
        if let value = node["includes"], let items = array(value, sub("includes")) {
            var includes: [String] = []
            for (index, item) in items.enumerated() {
                let itemPath = JSONPath.appending(index, to: sub("includes"))
                guard let text = string(item, itemPath) else { continue }
                if Self.advertisementIncludes.contains(text) {
                    includes.append(text)
                } else {
                    error(
                        item, itemPath, "unknown include \"\(text)\"",
                        hint: Suggestions.hint(for: text, in: Self.advertisementIncludes))
                }
            }
            fields.includes = includes
        }
        if let value = node["discoverable"] { fields.discoverable = bool(value, sub("discoverable")) }
        if let value = node["minInterval"] { fields.minInterval = integer(value, sub("minInterval"), in: 20...10_485) }
        if let value = node["maxInterval"] { fields.maxInterval = integer(value, sub("maxInterval"), in: 20...10_485) }
        if let value = node["duration"] { fields.duration = integer(value, sub("duration"), in: 1...65_535) }
        if let value = node["timeout"] { fields.timeout = integer(value, sub("timeout"), in: 1...65_535) }
        if let min = fields.minInterval, let max = fields.maxInterval, min > max, let node = node["maxInterval"] {
            error(node, sub("maxInterval"), "maxInterval \(max) is less than minInterval \(min)")
        }
        if let value = node["secondaryChannel"], let text = string(value, sub("secondaryChannel")) {
            if let channel = SecondaryChannel(rawValue: text) {
                fields.secondaryChannel = channel
            } else {
                error(
                    value, sub("secondaryChannel"), "unknown secondary channel \"\(text)\"",
                    hint: Suggestions.hint(for: text, in: SecondaryChannel.allCases.map(\.rawValue)) ?? "use \"1M\", \"2M\" or \"Coded\"")
            }
        }
        if let value = node["scanResponse"] { fields.scanResponse = scanResponseFields(value, sub("scanResponse")) }
        return fields
    }

    /// The AD-structure fields an advertisement and its scan response share: service and solicited UUIDs,
    /// manufacturer data, service data and other AD structures.
    mutating func adStructures(_ node: JSONNode, _ path: String) -> ScanResponseFields {
        var fields = ScanResponseFields()
        func sub(_ key: String) -> String { JSONPath.appending(key, to: path) }
        if let value = node["serviceUUIDs"] { fields.serviceUUIDs = uuidList(value, sub("serviceUUIDs")) }
        if let value = node["solicitUUIDs"] { fields.solicitUUIDs = uuidList(value, sub("solicitUUIDs")) }
        if let value = node["manufacturerData"] {
            let dataPath = sub("manufacturerData")
            if case .object(let members) = value.value {
                var data: [UInt16: Template] = [:]
                for member in members {
                    let memberPath = JSONPath.appending(member.key, to: dataPath)
                    let keyNode = JSONNode(.string(member.key), at: member.keyLocation)
                    guard let company = flexibleInteger(keyNode, memberPath, in: 0...0xFFFF) else { continue }
                    if let source = valueSource(member.value, memberPath, usage: .advertisement) {
                        refuseEmpty(source.template, member.value, memberPath, "manufacturer data")
                        data[UInt16(company)] = source.template
                    }
                }
                fields.manufacturerData = data
            } else {
                typeError(value, dataPath, expected: "an object of company id → bytes")
            }
        }
        if let value = node["data"] {
            let dataPath = sub("data")
            if case .object(let members) = value.value {
                var data: [UInt8: Template] = [:]
                for member in members {
                    let memberPath = JSONPath.appending(member.key, to: dataPath)
                    let keyNode = JSONNode(.string(member.key), at: member.keyLocation)
                    guard let type = flexibleInteger(keyNode, memberPath, in: 1...0xFF) else { continue }
                    if Self.advertisementTypesOfOtherFields.contains(type) {
                        error(
                            at: member.keyLocation, memberPath, "AD type \(member.key) is built from another field",
                            hint: "use localName, serviceUUIDs, solicitUUIDs, serviceData, manufacturerData, appearance or includes")
                        continue
                    }
                    if AdvertisingData.typesBlueZRefusesInData.contains(UInt8(type)) {
                        error(
                            at: member.keyLocation, memberPath,
                            "AD type \(member.key) (\(ADType(rawValue: UInt8(type)))) is one bluetoothd does not let an application advertise",
                            hint: "bluetoothd refuses the whole advertisement with it (its own AD types: link, pairing, mesh); leave it out"
                        )
                        continue
                    }
                    if let source = valueSource(member.value, memberPath, usage: .advertisement) {
                        refuseEmpty(source.template, member.value, memberPath, "an AD structure")
                        data[UInt8(type)] = source.template
                    }
                }
                fields.data = data
            } else {
                typeError(value, dataPath, expected: "an object of AD type → bytes")
            }
        }
        if let value = node["serviceData"] {
            let dataPath = sub("serviceData")
            if case .object(let members) = value.value {
                var data: [BluetoothUUID: Template] = [:]
                for member in members {
                    let memberPath = JSONPath.appending(member.key, to: dataPath)
                    guard let uuid = uuid(JSONNode(.string(member.key), at: member.keyLocation), memberPath) else { continue }
                    if let source = valueSource(member.value, memberPath, usage: .advertisement) {
                        refuseEmpty(
                            source.template, member.value, memberPath, "service data", hint: "a service UUID alone belongs in serviceUUIDs")
                        data[uuid] = source.template
                    }
                }
                fields.serviceData = data
            } else {
                typeError(value, dataPath, expected: "an object of service UUID → bytes")
            }
        }
        return fields
    }

    /// `scanResponse`: the fields bluetoothd 5.80 and later put in the scan response (`ScanResponse*`).
    mutating func scanResponseFields(_ node: JSONNode, _ path: String) -> ScanResponseFields? {
        guard members(node, path, allowed: Self.scanResponseFieldKeys + ["description"]) != nil else { return nil }
        documentation(node, path)
        return adStructures(node, path)
    }

    /// `periodic` and `directed` are refused with the reason: bluetoothd has no D-Bus API for them.
    mutating func refuseAdvertisingNeedingHCI(_ node: JSONNode, _ path: String) {
        guard case .object(let members) = node.value else { return }
        for member in members {
            guard let what = Self.advertisingNeedingHCI[member.key] else { continue }
            error(
                at: member.keyLocation, JSONPath.appending(member.key, to: path),
                "\(what) needs an HCI user channel: bluetoothd's LEAdvertisement1, which gattemu advertises through, cannot send it",
                hint: "leave \"\(member.key)\" out; gattemu advertises legacy and extended (secondaryChannel) advertising sets")
        }
    }

    /// bluetoothd refuses a whole advertisement with an empty value in ManufacturerData, ServiceData or Data (its
    /// parser takes an empty byte array for a wrong type): "Failed to parse advertisement", and gattemu would not run.
    mutating func refuseEmpty(_ template: Template, _ node: JSONNode, _ path: String, _ what: String, hint: String? = nil) {
        guard template.literalBytes?.isEmpty == true else { return }
        error(
            node, path, "\(what) with no bytes: bluetoothd refuses the whole advertisement with an empty value",
            hint: [hint, "give at least one byte, or leave the entry out"].compactMap { $0 }.joined(separator: "; "))
    }
}
