import JSON

extension ProfileDecoder {
    static let topLevelKeys = [
        "$schema", "format", "description", "extends", "device", "advertisements", "services", "variables", "state",
        "connectionState", "triggers", "timers", "rules", "faults", "security", "firmware", "channels",
    ]

    /// Decodes the whole document; the result is nil only when the root is not an object.
    mutating func profile(_ root: JSONNode) -> DeviceProfile? {
        guard members(root, "", allowed: Self.topLevelKeys) != nil else { return nil }
        if let format = required(root, "format", ""), let version = integer(format, "format", in: Int.min...Int.max),
            version != 1
        {
            error(format, "format", "unsupported format \(version)", hint: "this gattemu reads format 1")
        }
        var profile = DeviceProfile(
            file: file, description: nil, device: DeviceDefinition(), advertisements: [], services: [], variables: [],
            state: [], triggers: [], timers: [], rules: [], sourceTree: nil)
        if let description = root["description"] { profile.description = string(description, "description") }
        if let schema = root["$schema"] { _ = string(schema, "$schema") }
        if let device = root["device"] { profile.device = self.device(device, "device") }
        if let security = root["security"] { profile.security = self.security(security, "security") }
        if let services = root["services"], let items = array(services, "services") {
            serviceIDsByUUID = Self.serviceIDsByUUID(items)
            profile.services = items.enumerated().compactMap { service($1, JSONPath.appending($0, to: "services")) }
        }
        if let channels = root["channels"], let items = array(channels, "channels") {
            profile.channels = items.enumerated().compactMap { channel($1, JSONPath.appending($0, to: "channels")) }
            profile.publishChannelPSMs()
        }
        for service in profile.services { serviceUUIDsByID[service.id] = service.uuid }
        characteristicIDsByUUID = DeviceProfile.characteristicIDsByUUID(profile.characteristics)
        // Firmware names characteristics, so it is read once their ids are known (a UUID there gets their ids as a hint).
        if let firmware = root["firmware"] { profile.firmware = self.firmware(firmware, "firmware") }
        if let advertisements = root["advertisements"], let items = array(advertisements, "advertisements") {
            profile.advertisements = items.enumerated().compactMap {
                advertisement($1, JSONPath.appending($0, to: "advertisements"))
            }
        }
        if let variables = root["variables"] { profile.variables = namedValues(variables, "variables") }
        if let state = root["state"] { profile.state = namedValues(state, "state") }
        if let names = root["connectionState"], let items = array(names, "connectionState") {
            profile.connectionState = items.enumerated().compactMap { string($1, JSONPath.appending($0, to: "connectionState")) }
        }
        if let triggers = root["triggers"] { profile.triggers = namedTriggers(triggers, "triggers") }
        if let timers = root["timers"], let items = array(timers, "timers") {
            profile.timers = items.enumerated().compactMap { timer($1, JSONPath.appending($0, to: "timers")) }
        }
        if let rules = root["rules"], let items = array(rules, "rules") {
            profile.rules = items.enumerated().compactMap { rule($1, JSONPath.appending($0, to: "rules"), index: $0) }
        }
        if let faults = root["faults"] {
            do {
                profile.faults = try FaultSpecDecoder.scenario(faults, path: "faults")
                for (index, spec) in profile.faults.enumerated() {
                    if let problem = profile.problem(with: spec) {
                        let path = JSONPath.appending(index, to: "faults")
                        self.error(faults, JSONPath.appending(problem.path, to: path), problem.message)
                    }
                }
            } catch {
                self.error(at: error.location ?? faults.location, error.path, error.message)
            }
        }
        if let firmware = profile.firmware { profile.serve(firmware) }
        return profile
    }

    mutating func namedValues(_ node: JSONNode, _ path: String) -> [NamedValue] {
        guard case .object(let members) = node.value else {
            typeError(node, path, expected: "an object of name → value")
            return []
        }
        var values: [NamedValue] = []
        var names: Set<String> = []
        for member in members {
            let memberPath = JSONPath.appending(member.key, to: path)
            guard Self.isIdentifier(member.key) else {
                error(
                    at: member.keyLocation, memberPath, "\"\(member.key)\" is not a valid name",
                    hint: "use letters, digits and '_', starting with a letter")
                continue
            }
            if TemplateBuiltins.names[member.key] != nil || TemplateBuiltins.functions[member.key] != nil {
                error(at: member.keyLocation, memberPath, "\"\(member.key)\" is a built-in name")
                continue
            }
            guard names.insert(member.key).inserted else {
                error(at: member.keyLocation, memberPath, "duplicate key \"\(member.key)\"")
                continue
            }
            if let value = profileValue(member.value, memberPath) {
                values.append(NamedValue(name: member.key, value: value, path: memberPath, keyLocation: member.keyLocation))
            }
        }
        return values
    }

    mutating func namedTriggers(_ node: JSONNode, _ path: String) -> [NamedTrigger] {
        guard case .object(let members) = node.value else {
            typeError(node, path, expected: "an object of trigger name → description")
            return []
        }
        return members.compactMap { member in
            let memberPath = JSONPath.appending(member.key, to: path)
            guard Self.isIdentifier(member.key) else {
                error(at: member.keyLocation, memberPath, "\"\(member.key)\" is not a valid trigger name")
                return nil
            }
            guard let description = string(member.value, memberPath) else { return nil }
            return NamedTrigger(name: member.key, description: description, path: memberPath)
        }
    }

    mutating func timer(_ node: JSONNode, _ path: String) -> TimerDefinition? {
        guard members(node, path, allowed: ["id", "after", "every", "start", "cancelOnDisconnect", "description"]) != nil
        else { return nil }
        documentation(node, path)
        func sub(_ key: String) -> String { JSONPath.appending(key, to: path) }
        let id = required(node, "id", path).flatMap { identifier($0, sub("id")) }
        var duration: DurationSpec?
        var repeats = false
        switch (node["after"], node["every"]) {
        case (let after?, nil): duration = timerDuration(after, sub("after"))
        case (nil, let every?):
            duration = timerDuration(every, sub("every"))
            repeats = true
        case (_?, _?): error(node, path, "a timer takes \"after\" or \"every\", not both")
        case (nil, nil): error(node, path, "a timer needs \"after\" (once) or \"every\" (repeating)")
        }
        var startOnConnect = false
        var startOnRun = false
        if let start = node["start"], let text = string(start, sub("start")) {
            switch text {
            case "connect": startOnConnect = true
            case "run": startOnRun = true
            case "manual": startOnConnect = false
            default:
                error(
                    start, sub("start"), "unknown timer start \"\(text)\"",
                    hint: "use \"connect\", \"run\" (when the device starts) or \"manual\" (started by a startTimer action)")
            }
        }
        let cancelOnDisconnect = node["cancelOnDisconnect"].flatMap { bool($0, sub("cancelOnDisconnect")) } ?? startOnConnect
        guard let id else { return nil }
        // A timer whose duration is wrong (already reported) is kept, so rules naming it get no second error.
        return TimerDefinition(
            id: id, after: duration ?? .milliseconds(ProfileLimits.minimumTimerMilliseconds), repeats: repeats,
            startOnConnect: startOnConnect, startOnRun: startOnRun,
            cancelOnDisconnect: cancelOnDisconnect, path: path)
    }

    /// A timer's `after`/`every` (or a `startTimer` action's `after`): a duration of at least
    /// ``ProfileLimits/minimumTimerMilliseconds`` when it is written as a number.
    mutating func timerDuration(_ node: JSONNode, _ path: String) -> DurationSpec? {
        guard let duration = duration(node, path) else { return nil }
        if case .milliseconds(let value) = duration, value < ProfileLimits.minimumTimerMilliseconds {
            error(
                node, path, "a timer needs at least \(ProfileLimits.minimumTimerMilliseconds) ms, not \(value)",
                hint: "timers fire at most every \(ProfileLimits.minimumTimerMilliseconds) ms")
            return nil
        }
        return duration
    }
}
