import Bluetooth
import JSON

/// Cross-reference checks over a decoded profile: ids, names, flags, lengths and templates.
///
/// Every lookup goes through a dictionary or set built once, so checking is linear in the size of the profile
/// (plus "did you mean" hints, bounded by a ``SuggestionBudget``).
struct SemanticChecks {
    let profile: DeviceProfile
    var diagnostics: [Diagnostic] = []
    let suggestions: SuggestionBudget
    /// The first characteristic with each id.
    let characteristicsByID: [CharacteristicID: CharacteristicDefinition]
    /// Characteristic ids by UUID, for the hint when a rule names a characteristic by UUID.
    let characteristicIDsByUUID: [BluetoothUUID: [String]]
    let variablesByName: [String: NamedValue]
    let stateByName: [String: NamedValue]
    let timerIDs: Set<String>
    let triggerNames: Set<String>
    let variantNames: Set<String>
    /// What templates see when rendered with the initial values and no request, for length checks.
    let staticContext: TemplateContext

    init(profile: DeviceProfile, suggestions: SuggestionBudget = SuggestionBudget()) {
        self.profile = profile
        self.suggestions = suggestions
        var characteristics: [CharacteristicID: CharacteristicDefinition] = [:]
        for characteristic in profile.characteristics where characteristics[characteristic.id] == nil {
            characteristics[characteristic.id] = characteristic
        }
        characteristicsByID = characteristics
        characteristicIDsByUUID = DeviceProfile.characteristicIDsByUUID(profile.characteristics)
        variablesByName = Dictionary(profile.variables.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        stateByName = Dictionary(profile.state.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        timerIDs = Set(profile.timers.map(\.id))
        triggerNames = Set(profile.triggers.map(\.name))
        variantNames = Set(profile.variantNames)
        staticContext = profile.staticContext(
            environment: EngineEnvironment(adapterAddress: .zero), state: nil, variables: nil)
    }

    mutating func report(_ path: String, _ message: String, hint: String? = nil) {
        diagnostics.append(profile.diagnostic(at: path, message: message, hint: hint))
    }

    /// A "did you mean" hint while the budget lasts; `candidates` are only gathered when it does.
    func hint(for word: String, in candidates: () -> [String]) -> String? {
        Suggestions.hint(for: word, in: candidates, budget: suggestions)
    }

    mutating func run(templates: [ProfileDecoder.PendingTemplate]) {
        checkIdentity()
        checkServices()
        checkTimers()
        checkFirmware()
        checkChannels()
        for rule in profile.rules { check(rule) }
        checkTemplates(templates)
    }

    // MARK: Ids and names

    private mutating func checkIdentity() {
        // Ids must be unique; UUIDs need not be (GATT allows services, and characteristics of a service, to share one:
        // HID Reports, several Battery services), since everything names a characteristic or a service by its id.
        var serviceIDs: [String: String] = [:]
        var characteristicIDs: [CharacteristicID: String] = [:]
        for service in profile.services {
            if let first = serviceIDs[service.id] {
                report(
                    JSONPath.appending("id", to: service.path), "duplicate service id \"\(service.id)\"",
                    hint: "first used at \(first)")
            } else {
                serviceIDs[service.id] = service.path
            }
            for characteristic in service.characteristics {
                if let first = characteristicIDs[characteristic.id] {
                    report(
                        JSONPath.appending("id", to: characteristic.path),
                        "duplicate characteristic id \"\(characteristic.id)\"", hint: "first used at \(first)")
                } else {
                    characteristicIDs[characteristic.id] = characteristic.path
                }
                var descriptorIDs: Set<String> = []
                for descriptor in characteristic.descriptors where !descriptorIDs.insert(descriptor.id).inserted {
                    report(JSONPath.appending("id", to: descriptor.path), "duplicate descriptor id \"\(descriptor.id)\"")
                }
            }
        }
        var ruleIDs: Set<String> = []
        for rule in profile.rules where !ruleIDs.insert(rule.id).inserted {
            report(JSONPath.appending("id", to: rule.path), "duplicate rule id \"\(rule.id)\"")
        }
        var timerIDs: Set<String> = []
        for timer in profile.timers where !timerIDs.insert(timer.id).inserted {
            report(JSONPath.appending("id", to: timer.path), "duplicate timer id \"\(timer.id)\"")
        }
        for value in profile.state where variablesByName[value.name] != nil {
            diagnostics.append(
                Diagnostic(
                    at: value.keyLocation ?? profile.location(of: value.path) ?? SourceLocation(file: profile.file, line: 1, column: 1),
                    path: value.path, message: "\"\(value.name)\" is both a variable and a state value", hint: "rename one of them"))
        }
        var listed: [String: Int] = [:]
        for (index, name) in profile.connectionState.enumerated() {
            if let first = listed[name] {
                report(
                    JSONPath.appending(index, to: "connectionState"), "\"\(name)\" is listed twice",
                    hint: "also at \(JSONPath.appending(first, to: "connectionState")); list each state value once")
                continue
            }
            listed[name] = index
            guard stateByName[name] == nil else { continue }
            report(
                JSONPath.appending(index, to: "connectionState"), "\"\(name)\" is not a state value",
                hint: hint(for: name, in: { profile.state.map(\.name) }) ?? "declare it under \"state\" with its initial value")
        }
    }

    private mutating func checkServices() {
        checkHandles()
        let serviceIDs = Set(profile.services.map(\.id))
        for service in profile.services {
            for (index, include) in service.includes.enumerated() {
                let path = JSONPath.appending(index, to: JSONPath.appending("includes", to: service.path))
                if include == service.id {
                    report(path, "a service cannot include itself")
                } else if !serviceIDs.contains(include) {
                    report(path, "unknown service \"\(include)\"", hint: hint(for: include, in: { profile.services.map(\.id) }))
                }
            }
            for characteristic in service.characteristics {
                let limit = characteristic.maxLength ?? ProfileLimits.attributeValueLength
                let length = staticLength(of: characteristic.value.template)
                if length > limit {
                    report(
                        JSONPath.appending("value", to: characteristic.path),
                        "initial value is \(length) bytes, longer than maxLength \(limit)")
                }
                for descriptor in characteristic.descriptors {
                    let length = staticLength(of: descriptor.value.template)
                    if length > ProfileLimits.attributeValueLength {
                        report(
                            descriptor.path,
                            "descriptor value is \(length) bytes, over the \(ProfileLimits.attributeValueLength)-byte attribute limit")
                    }
                }
            }
        }
    }

    /// Handles asked of BlueZ: each at most once, a characteristic's value after its service's declaration (and
    /// after the declaration's own handle), a descriptor after its characteristic's value.
    private mutating func checkHandles() {
        var used: [AttributeHandle: String] = [:]
        func claim(_ handle: AttributeHandle?, _ path: String) {
            guard let handle else { return }
            if let first = used[handle] {
                report(JSONPath.appending("handle", to: path), "handle \(handle.rawValue) is asked for twice", hint: "also at \(first)")
            } else {
                used[handle] = path
            }
        }
        for service in profile.services {
            claim(service.handle, service.path)
            var previous = service.handle
            for characteristic in service.characteristics {
                if let handle = characteristic.handle {
                    // The declaration takes handle - 1, which must come after everything before it.
                    let declaration = AttributeHandle(rawValue: handle.rawValue - 1)
                    claim(declaration == 0 ? nil : declaration, characteristic.path + " (declaration)")
                    claim(handle, characteristic.path)
                    // After 0xFFFF there is no room at all.
                    if let previous, previous.next.map({ handle <= $0 }) ?? true {
                        report(
                            JSONPath.appending("handle", to: characteristic.path),
                            "handle \(handle.rawValue) must leave room after \(previous.rawValue) for the characteristic's declaration",
                            hint: "a characteristic's declaration takes the handle before its value")
                    }
                    previous = handle
                }
                for descriptor in characteristic.descriptors {
                    claim(descriptor.handle, descriptor.path)
                    if let handle = descriptor.handle, let previous, handle <= previous {
                        report(
                            JSONPath.appending("handle", to: descriptor.path),
                            "handle \(handle.rawValue) must come after \(previous.rawValue)")
                    }
                    if let handle = descriptor.handle { previous = handle }
                }
            }
        }
    }

    /// The length of a template rendered with the initial values and an empty request.
    private func staticLength(of template: Template) -> Int {
        var context = staticContext
        return template.render(in: &context).count
    }

    private mutating func checkTimers() {
        for timer in profile.timers {
            check(timer.after, at: JSONPath.appending(timer.repeats ? "every" : "after", to: timer.path))
        }
    }

    private mutating func check(_ duration: DurationSpec, at path: String) {
        guard case .variable(let name) = duration else { return }
        guard let value = variablesByName[name] ?? stateByName[name] else {
            report(path, "unknown variable \"\(name)\"", hint: hint(for: name, in: { allValueNames }))
            return
        }
        if value.value.kind != .number {
            report(path, "\"\(name)\" is \(value.value.kind.rawValue), a duration needs a number of milliseconds")
        }
    }

    private var allValueNames: [String] { profile.variables.map(\.name) + profile.state.map(\.name) }

    /// The SMP characteristic is written without response and notifies (as mcumgr clients use it) and no rule
    /// answers it; the revision characteristic can be read.
    private mutating func checkFirmware() {
        guard let firmware = profile.firmware else { return }
        let smpPath = JSONPath.appending("characteristic", to: firmware.path)
        if let smp = characteristicsByID[firmware.characteristic] {
            let missing = [CharacteristicFlag.writeWithoutResponse, .notify].filter { !smp.flags.contains($0) }
            if !missing.isEmpty {
                report(
                    smpPath,
                    "the SMP characteristic \"\(smp.id)\" lacks " + missing.map { "\"\($0.rawValue)\"" }.joined(separator: " and "),
                    hint: "mcumgr clients write requests without response and take answers as notifications")
            }
            for rule in profile.rules {
                guard case .write(let id, _) = rule.trigger, id == smp.id else { continue }
                report(
                    JSONPath.appending("on", to: rule.path), "rule \"\(rule.id)\" answers writes to the SMP characteristic \"\(smp.id)\"",
                    hint: "the firmware target answers it; a rule there would never run")
            }
        } else {
            report(
                smpPath, "unknown characteristic \"\(firmware.characteristic)\"",
                hint: characteristicHint(firmware.characteristic) ?? "declare the SMP characteristic in services")
        }
        if let revision = firmware.revision {
            let path = JSONPath.appending("revision", to: firmware.path)
            if let characteristic = characteristicsByID[revision] {
                if !characteristic.flags.contains(.read) { report(path, "the revision characteristic \"\(revision)\" cannot be read") }
            } else {
                report(path, "unknown characteristic \"\(revision)\"", hint: characteristicHint(revision))
            }
        }
        check(firmware.bootTime, at: JSONPath.appending("bootTime", to: firmware.path))
        checkVersionedServices(firmware)
    }

    /// `firmware.services`: each a service of the profile, named once, whose presence only the version decides, and
    /// never the one the SMP or revision characteristic is in (the device must stay updatable and say its version).
    private mutating func checkVersionedServices(_ firmware: FirmwareDefinition) {
        var seen: Set<String> = []
        for entry in firmware.services {
            let path = JSONPath.appending("service", to: entry.path)
            guard let service = profile.services.first(where: { $0.id == entry.service }) else {
                report(
                    path, "unknown service \"\(entry.service)\"",
                    hint: hint(for: entry.service) { profile.services.map(\.id) } ?? "name a service declared in services")
                continue
            }
            if !seen.insert(entry.service).inserted {
                report(path, "service \"\(entry.service)\" is named twice", hint: "give it one entry with both bounds")
            }
            if !service.present {
                report(
                    path, "service \"\(entry.service)\" is also marked \"present\": false",
                    hint: "the running version decides whether it is in the table; leave \"present\" out")
            }
            let ids = Set(service.characteristics.map(\.id))
            if ids.contains(firmware.characteristic) {
                report(
                    path, "service \"\(entry.service)\" holds the SMP characteristic",
                    hint: "a version without it could never be updated again; version another service")
            }
            if let revision = firmware.revision, ids.contains(revision) {
                report(
                    path, "service \"\(entry.service)\" holds the revision characteristic \"\(revision)\"",
                    hint: "the device says its running version there at every boot; version another service")
            }
        }
    }

    // MARK: Rules

    private func characteristicHint(_ id: CharacteristicID) -> String? {
        DeviceProfile.idHint(forUUID: id.rawValue, in: characteristicIDsByUUID)
            ?? hint(for: id.rawValue, in: { profile.characteristics.map(\.id.rawValue) })
    }

    private mutating func check(_ rule: Rule) {
        let triggerPath = JSONPath.appending("on", to: rule.path)
        switch rule.trigger {
        case .read(let id):
            requireCharacteristic(
                id, at: JSONPath.appending("read", to: triggerPath),
                flags: [
                    .read, .encryptRead, .encryptAuthenticatedRead, .secureRead,
                ], purpose: "a read trigger", flagName: "read")
        case .write(let id, let matcher):
            requireCharacteristic(
                id, at: JSONPath.appending("write", to: triggerPath),
                flags: [
                    .write, .writeWithoutResponse, .reliableWrite, .authenticatedSignedWrites, .encryptWrite,
                    .encryptAuthenticatedWrite, .secureWrite,
                ], purpose: "a write trigger", flagName: "write")
            if let characteristic = characteristicsByID[id] {
                let limit = characteristic.maxLength ?? ProfileLimits.attributeValueLength
                for (key, template) in [("equals", matcher.equals), ("prefix", matcher.prefix)] {
                    guard let template else { continue }
                    let length = staticLength(of: template)
                    if length > limit {
                        report(
                            JSONPath.appending(key, to: triggerPath),
                            "\(key) is at least \(length) bytes but writes to \"\(id)\" are at most \(limit): it can never match")
                    }
                }
            }
        case .subscribe(let id), .unsubscribe(let id):
            let key = if case .subscribe = rule.trigger { "subscribe" } else { "unsubscribe" }
            requireCharacteristic(
                id, at: JSONPath.appending(key, to: triggerPath),
                flags: [
                    .notify, .indicate, .encryptNotify, .encryptIndicate, .encryptAuthenticatedNotify,
                    .encryptAuthenticatedIndicate, .secureNotify, .secureIndicate,
                ], purpose: "a \(key) trigger", flagName: "notify")
        case .timer(let id):
            if !timerIDs.contains(id) {
                report(
                    JSONPath.appending("timer", to: triggerPath), "unknown timer \"\(id)\"",
                    hint: hint(for: id, in: { profile.timers.map(\.id) }) ?? "declare it under \"timers\"")
            }
        case .trigger(let name):
            if !triggerNames.contains(name) {
                report(
                    JSONPath.appending("trigger", to: triggerPath), "unknown trigger \"\(name)\"",
                    hint: hint(for: name, in: { profile.triggers.map(\.name) }) ?? "declare it under \"triggers\"")
            }
        case .channelOpen(let id), .sdu(let id, _), .channelClose(let id):
            let key =
                switch rule.trigger {
                case .channelOpen: "open"
                case .sdu: "sdu"
                default: "close"
                }
            checkChannel(id, at: JSONPath.appending(key, to: triggerPath))
        case .connect, .disconnect:
            break
        }
        for condition in rule.conditions { check(condition, in: rule) }
        for action in rule.actions { check(action, in: rule) }
    }

    private mutating func requireCharacteristic(
        _ id: CharacteristicID, at path: String, flags: [CharacteristicFlag], purpose: String, flagName: String
    ) {
        guard let characteristic = characteristicsByID[id] else {
            report(path, "unknown characteristic \"\(id)\"", hint: characteristicHint(id))
            return
        }
        if !flags.contains(where: characteristic.has) {
            report(path, "\(purpose) on \"\(id)\", which has no \(flagName) flag")
        }
    }

    private func declaredValue(_ name: String) -> NamedValue? {
        stateByName[name] ?? variablesByName[name]
    }

    private mutating func check(_ condition: Condition, in rule: Rule) {
        let namePath = JSONPath.appending(condition.scope.rawValue, to: condition.path)
        let valuePath = JSONPath.appending(condition.comparison.rawValue, to: condition.path)
        let numeric: Set<Condition.Comparison> = [.less, .lessOrEqual, .greater, .greaterOrEqual]
        switch condition.scope {
        case .argument:
            guard case .trigger = rule.trigger else {
                report(namePath, "argument conditions only apply to named-trigger rules")
                return
            }
            return
        case .state, .variable:
            let isState = condition.scope == .state
            guard let declared = (isState ? stateByName : variablesByName)[condition.name] else {
                let inOther = (isState ? variablesByName : stateByName)[condition.name] != nil
                let hint =
                    inOther
                    ? "\"\(condition.name)\" is a \(isState ? "variable" : "state value")"
                    : self.hint(for: condition.name, in: { (isState ? profile.state : profile.variables).map(\.name) })
                report(namePath, "unknown \(isState ? "state value" : "variable") \"\(condition.name)\"", hint: hint)
                return
            }
            if declared.value.kind != condition.value.kind {
                report(
                    valuePath,
                    "\"\(condition.name)\" is \(declared.value.kind.rawValue) but this compares with \(condition.value.kind.rawValue)")
            } else if numeric.contains(condition.comparison), declared.value.kind != .number {
                report(
                    valuePath, "\(condition.comparison.rawValue) needs numbers; \"\(condition.name)\" is \(declared.value.kind.rawValue)")
            }
        }
    }

    private mutating func check(_ action: Action, in rule: Rule) {
        let answersRequest: Bool
        switch rule.trigger {
        case .read, .write: answersRequest = true
        default: answersRequest = false
        }
        switch action.kind {
        case .reply, .succeed, .fail:
            if !answersRequest {
                report(action.path, "only rules triggered by a read or write can reply")
            }
            if case .reply = action.kind, case .write = rule.trigger {
                report(action.path, "a write cannot be answered with a value", hint: "use succeed, fail or notify")
            }
            if case .reply(let template) = action.kind, case .read(let id) = rule.trigger, let characteristic = characteristicsByID[id] {
                checkLength(of: template, for: characteristic, at: action.path, valuePath: action.path)
            }
        case .notify(let id, let template, _, let indicate):
            guard let characteristic = characteristicsByID[id] else {
                report(action.path, "unknown characteristic \"\(id)\"", hint: characteristicHint(id))
                return
            }
            let flags: [CharacteristicFlag] =
                indicate
                ? [.indicate, .encryptIndicate, .encryptAuthenticatedIndicate, .secureIndicate]
                : [.notify, .encryptNotify, .encryptAuthenticatedNotify, .secureNotify]
            if !flags.contains(where: characteristic.has) {
                let word = indicate ? "indicate" : "notify"
                let other = indicate ? "notify" : "indicate"
                report(
                    action.path, "\"\(id)\" has no \(word) flag",
                    hint: characteristic.has(indicate ? .notify : .indicate)
                        ? "it has \(other); did you mean \"\(other)\"?" : "add \"\(word)\" to its flags")
            }
            checkLength(of: template, for: characteristic, at: action.path)
        case .setValue(let id, let template):
            guard let characteristic = characteristicsByID[id] else {
                report(action.path, "unknown characteristic \"\(id)\"", hint: characteristicHint(id))
                return
            }
            checkLength(of: template, for: characteristic, at: action.path)
        case .set(let name, let assignment):
            guard let declared = declaredValue(name) else {
                report(
                    action.path, "unknown variable or state value \"\(name)\"",
                    hint: hint(for: name, in: { allValueNames }) ?? "declare it under \"state\"")
                return
            }
            let kind: ProfileValue.Kind =
                switch assignment {
                case .literal(let value): value.kind
                case .template: .bytes
                case .increment: .number
                }
            if kind != declared.value.kind {
                report(action.path, "\"\(name)\" is \(declared.value.kind.rawValue) but is set to \(kind.rawValue)")
            }
        case .delay(let duration):
            check(duration, at: action.path)
        case .advertise(let variant?):
            if !variantNames.contains(variant) {
                report(
                    action.path, "unknown advertisement variant \"\(variant)\"",
                    hint: hint(for: variant, in: { profile.variantNames }) ?? "declare it under an advertisement's \"variants\"")
            }
        case .startTimer(let id, let after):
            checkTimer(id, at: action.path)
            if let after { check(after, at: action.path.replacingLastComponent(with: "after")) }
        case .cancelTimer(let id):
            checkTimer(id, at: action.path)
        case .send(let id, _), .stream(let id, _), .closeChannel(let id):
            checkChannel(id, at: action.path)
        case .advertise(nil), .startAdvertising, .stopAdvertising, .disconnect, .log:
            break
        }
    }

    private mutating func checkChannel(_ id: String, at path: String) {
        if profile.channel(id) == nil {
            report(
                path, "unknown channel \"\(id)\"",
                hint: hint(for: id, in: { profile.channels.map(\.id) }) ?? "declare it under \"channels\"")
        }
    }

    // MARK: Channels

    /// Ids once each, a fixed PSM once, a published PSM in a service of the profile.
    private mutating func checkChannels() {
        var ids: [String: String] = [:]
        var psms: [UInt16: String] = [:]
        for channel in profile.channels {
            if let first = ids[channel.id] {
                report(JSONPath.appending("id", to: channel.path), "duplicate channel id \"\(channel.id)\"", hint: "first used at \(first)")
            } else {
                ids[channel.id] = channel.path
            }
            if case .fixed(let psm) = channel.psm {
                if let first = psms[psm] {
                    report(
                        JSONPath.appending("psm", to: channel.path), "PSM \(channel.psm) is already channel \(first)'s",
                        hint: "each channel listens on a PSM of its own")
                } else {
                    psms[psm] = channel.id
                }
            }
            if let service = channel.publish, !profile.services.contains(where: { $0.id == service }) {
                report(
                    JSONPath.appending("publish", to: channel.path), "unknown service \"\(service)\"",
                    hint: hint(for: service, in: { profile.services.map(\.id) }) ?? "name the service the PSM characteristic goes in")
            }
        }
    }

    /// Reports a value that is longer than the characteristic allows (`maxLength`, else 512) even with an empty
    /// request and the initial values.
    private mutating func checkLength(
        of template: Template, for characteristic: CharacteristicDefinition, at path: String, valuePath: String? = nil
    ) {
        let limit = characteristic.maxLength ?? ProfileLimits.attributeValueLength
        let length = staticLength(of: template)
        if length > limit {
            report(
                valuePath ?? path.replacingLastComponent(with: "value"),
                "value is at least \(length) bytes, longer than \(characteristic.maxLength == nil ? "the \(limit)-byte attribute limit" : "maxLength \(limit)") of \"\(characteristic.id)\""
            )
        }
    }

    private mutating func checkTimer(_ id: String, at path: String) {
        if !timerIDs.contains(id) {
            report(
                path, "unknown timer \"\(id)\"",
                hint: hint(for: id, in: { profile.timers.map(\.id) }) ?? "declare it under \"timers\"")
        }
    }

    // MARK: Templates

    private mutating func checkTemplates(_ templates: [ProfileDecoder.PendingTemplate]) {
        let variables = Set(profile.variables.map(\.name))
        let state = Set(profile.state.map(\.name))
        let characteristics = Set(characteristicsByID.keys.map(\.rawValue))
        for pending in templates {
            let checker = TemplateChecker(
                variables: variables, state: state, characteristics: characteristics, usage: pending.usage,
                suggestions: suggestions)
            for issue in checker.check(pending.template) {
                let node = JSONNode(.string(pending.template.source), at: pending.location)
                diagnostics.append(
                    Diagnostic(
                        at: ProfileDecoder.location(in: node, offset: issue.offset), path: pending.path, message: issue.message,
                        hint: issue.hint))
            }
        }
    }
}

extension String {
    /// `a.b.c` → `a.b.<name>`.
    func replacingLastComponent(with name: String) -> String {
        guard let dot = lastIndex(of: ".") else { return name }
        return String(self[..<dot]) + "." + name
    }
}
