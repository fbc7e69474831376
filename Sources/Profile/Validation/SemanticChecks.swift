/// Cross-reference checks over a decoded profile: ids, names, flags, lengths and templates.
struct SemanticChecks {
    let profile: DeviceProfile
    var diagnostics: [Diagnostic] = []

    init(profile: DeviceProfile) {
        self.profile = profile
    }

    mutating func report(_ path: String, _ message: String, hint: String? = nil) {
        diagnostics.append(profile.diagnostic(at: path, message: message, hint: hint))
    }

    mutating func run(templates: [ProfileDecoder.PendingTemplate]) {
        checkIdentity()
        checkServices()
        checkTimers()
        for rule in profile.rules { check(rule) }
        checkTemplates(templates)
    }

    // MARK: Ids and names

    private mutating func checkIdentity() {
        var serviceIDs: [String: String] = [:]
        var serviceUUIDs: [String: String] = [:]
        var characteristicIDs: [String: String] = [:]
        for service in profile.services {
            if let first = serviceIDs[service.id] {
                report(JSONPath.appending("id", to: service.path), "duplicate service id \"\(service.id)\"",
                       hint: "first used at \(first)")
            } else {
                serviceIDs[service.id] = service.path
            }
            if let first = serviceUUIDs[service.uuid] {
                report(JSONPath.appending("uuid", to: service.path), "duplicate service UUID \(service.uuid)",
                       hint: "also used by \(first)")
            } else {
                serviceUUIDs[service.uuid] = service.path
            }
            var characteristicUUIDs: [String: String] = [:]
            for characteristic in service.characteristics {
                if let first = characteristicIDs[characteristic.id] {
                    report(JSONPath.appending("id", to: characteristic.path),
                           "duplicate characteristic id \"\(characteristic.id)\"", hint: "first used at \(first)")
                } else {
                    characteristicIDs[characteristic.id] = characteristic.path
                }
                if let first = characteristicUUIDs[characteristic.uuid] {
                    report(JSONPath.appending("uuid", to: characteristic.path),
                           "duplicate characteristic UUID \(characteristic.uuid) in this service", hint: "also used by \(first)")
                } else {
                    characteristicUUIDs[characteristic.uuid] = characteristic.path
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
        let variableNames = Set(profile.variables.map(\.name))
        for value in profile.state where variableNames.contains(value.name) {
            report(value.path, "\"\(value.name)\" is both a variable and a state value", hint: "rename one of them")
        }
        let stateNames = profile.state.map(\.name)
        for (index, name) in profile.connectionState.enumerated() where !stateNames.contains(name) {
            report(JSONPath.appending(index, to: "connectionState"), "\"\(name)\" is not a state value",
                   hint: Suggestions.hint(for: name, in: stateNames) ?? "declare it under \"state\" with its initial value")
        }
    }

    private mutating func checkServices() {
        let serviceIDs = profile.services.map(\.id)
        for service in profile.services {
            for (index, include) in service.includes.enumerated() {
                let path = JSONPath.appending(index, to: JSONPath.appending("includes", to: service.path))
                if include == service.id {
                    report(path, "a service cannot include itself")
                } else if !serviceIDs.contains(include) {
                    report(path, "unknown service \"\(include)\"", hint: Suggestions.hint(for: include, in: serviceIDs))
                }
            }
            for characteristic in service.characteristics {
                let limit = characteristic.maxLength ?? TemplateBuiltins.maximumLength
                var context = profile.staticContext(
                    environment: EngineEnvironment(adapterAddress: "00:00:00:00:00:00"), state: nil, variables: nil)
                let length = characteristic.value.template.render(in: &context).count
                if length > limit {
                    report(JSONPath.appending("value", to: characteristic.path),
                           "initial value is \(length) bytes, longer than maxLength \(limit)")
                }
            }
        }
    }

    private mutating func checkTimers() {
        for timer in profile.timers {
            check(timer.after, at: JSONPath.appending(timer.repeats ? "every" : "after", to: timer.path))
        }
    }

    private mutating func check(_ duration: DurationSpec, at path: String) {
        guard case .variable(let name) = duration else { return }
        guard let value = profile.variables.first(where: { $0.name == name }) ?? profile.state.first(where: { $0.name == name })
        else {
            report(path, "unknown variable \"\(name)\"", hint: Suggestions.hint(for: name, in: allValueNames))
            return
        }
        if value.value.kind != .number {
            report(path, "\"\(name)\" is \(value.value.kind.rawValue), a duration needs a number of milliseconds")
        }
    }

    private var allValueNames: [String] { profile.variables.map(\.name) + profile.state.map(\.name) }

    // MARK: Rules

    private func characteristicHint(_ id: String) -> String? {
        Suggestions.hint(for: id, in: profile.characteristics.map(\.id))
    }

    private mutating func check(_ rule: Rule) {
        let triggerPath = JSONPath.appending("on", to: rule.path)
        switch rule.trigger {
        case .read(let id):
            requireCharacteristic(id, at: JSONPath.appending("read", to: triggerPath), flags: [
                .read, .encryptRead, .encryptAuthenticatedRead, .secureRead,
            ], purpose: "a read trigger", flagName: "read")
        case .write(let id, _):
            requireCharacteristic(id, at: JSONPath.appending("write", to: triggerPath), flags: [
                .write, .writeWithoutResponse, .reliableWrite, .authenticatedSignedWrites, .encryptWrite,
                .encryptAuthenticatedWrite, .secureWrite,
            ], purpose: "a write trigger", flagName: "write")
        case .subscribe(let id), .unsubscribe(let id):
            let key = if case .subscribe = rule.trigger { "subscribe" } else { "unsubscribe" }
            requireCharacteristic(id, at: JSONPath.appending(key, to: triggerPath), flags: [
                .notify, .indicate, .encryptNotify, .encryptIndicate, .encryptAuthenticatedNotify,
                .encryptAuthenticatedIndicate, .secureNotify, .secureIndicate,
            ], purpose: "a \(key) trigger", flagName: "notify")
        case .timer(let id):
            if !profile.timers.contains(where: { $0.id == id }) {
                report(JSONPath.appending("timer", to: triggerPath), "unknown timer \"\(id)\"",
                       hint: Suggestions.hint(for: id, in: profile.timers.map(\.id)) ?? "declare it under \"timers\"")
            }
        case .trigger(let name):
            if !profile.triggers.contains(where: { $0.name == name }) {
                report(JSONPath.appending("trigger", to: triggerPath), "unknown trigger \"\(name)\"",
                       hint: Suggestions.hint(for: name, in: profile.triggers.map(\.name)) ?? "declare it under \"triggers\"")
            }
        case .connect, .disconnect:
            break
        }
        for condition in rule.conditions { check(condition, in: rule) }
        for action in rule.actions { check(action, in: rule) }
    }

    private mutating func requireCharacteristic(
        _ id: String, at path: String, flags: [CharacteristicFlag], purpose: String, flagName: String
    ) {
        guard let characteristic = profile.characteristic(id) else {
            report(path, "unknown characteristic \"\(id)\"", hint: characteristicHint(id))
            return
        }
        if !flags.contains(where: characteristic.has) {
            report(path, "\(purpose) on \"\(id)\", which has no \(flagName) flag")
        }
    }

    private func declaredValue(_ name: String) -> NamedValue? {
        profile.state.first(where: { $0.name == name }) ?? profile.variables.first(where: { $0.name == name })
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
            let pool = condition.scope == .state ? profile.state : profile.variables
            guard let declared = pool.first(where: { $0.name == condition.name }) else {
                let other = condition.scope == .state ? profile.variables : profile.state
                let hint = other.contains(where: { $0.name == condition.name })
                    ? "\"\(condition.name)\" is a \(condition.scope == .state ? "variable" : "state value")"
                    : Suggestions.hint(for: condition.name, in: pool.map(\.name))
                report(namePath, "unknown \(condition.scope == .state ? "state value" : "variable") \"\(condition.name)\"", hint: hint)
                return
            }
            if declared.value.kind != condition.value.kind {
                report(valuePath, "\"\(condition.name)\" is \(declared.value.kind.rawValue) but this compares with \(condition.value.kind.rawValue)")
            } else if numeric.contains(condition.comparison), declared.value.kind != .number {
                report(valuePath, "\(condition.comparison.rawValue) needs numbers; \"\(condition.name)\" is \(declared.value.kind.rawValue)")
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
        case .notify(let id, let template, _, let indicate):
            guard let characteristic = profile.characteristic(id) else {
                report(action.path, "unknown characteristic \"\(id)\"", hint: characteristicHint(id))
                return
            }
            let flags: [CharacteristicFlag] = indicate
                ? [.indicate, .encryptIndicate, .encryptAuthenticatedIndicate, .secureIndicate]
                : [.notify, .encryptNotify, .encryptAuthenticatedNotify, .secureNotify]
            if !flags.contains(where: characteristic.has) {
                let word = indicate ? "indicate" : "notify"
                let other = indicate ? "notify" : "indicate"
                report(action.path, "\"\(id)\" has no \(word) flag",
                       hint: characteristic.has(indicate ? .notify : .indicate) ? "it has \(other); did you mean \"\(other)\"?" : "add \"\(word)\" to its flags")
            }
            checkLength(of: template, for: characteristic, at: action.path)
        case .setValue(let id, let template):
            guard let characteristic = profile.characteristic(id) else {
                report(action.path, "unknown characteristic \"\(id)\"", hint: characteristicHint(id))
                return
            }
            checkLength(of: template, for: characteristic, at: action.path)
        case .set(let name, let assignment):
            guard let declared = declaredValue(name) else {
                report(action.path, "unknown variable or state value \"\(name)\"",
                       hint: Suggestions.hint(for: name, in: allValueNames) ?? "declare it under \"state\"")
                return
            }
            let kind: ProfileValue.Kind = switch assignment {
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
            if !profile.variantNames.contains(variant) {
                report(action.path, "unknown advertisement variant \"\(variant)\"",
                       hint: Suggestions.hint(for: variant, in: profile.variantNames) ?? "declare it under an advertisement's \"variants\"")
            }
        case .startTimer(let id, let after):
            checkTimer(id, at: action.path)
            if let after { check(after, at: action.path.replacingLastComponent(with: "after")) }
        case .cancelTimer(let id):
            checkTimer(id, at: action.path)
        case .advertise(nil), .startAdvertising, .stopAdvertising, .disconnect, .log:
            break
        }
    }

    /// Reports a value that is longer than the characteristic allows even with an empty request.
    private mutating func checkLength(of template: Template, for characteristic: CharacteristicDefinition, at path: String) {
        guard let limit = characteristic.maxLength else { return }
        var context = profile.staticContext(
            environment: EngineEnvironment(adapterAddress: "00:00:00:00:00:00"), state: nil, variables: nil)
        let length = template.render(in: &context).count
        if length > limit {
            report(path.replacingLastComponent(with: "value"),
                   "value is at least \(length) bytes, longer than maxLength \(limit) of \"\(characteristic.id)\"")
        }
    }

    private mutating func checkTimer(_ id: String, at path: String) {
        if !profile.timers.contains(where: { $0.id == id }) {
            report(path, "unknown timer \"\(id)\"",
                   hint: Suggestions.hint(for: id, in: profile.timers.map(\.id)) ?? "declare it under \"timers\"")
        }
    }

    // MARK: Templates

    private mutating func checkTemplates(_ templates: [ProfileDecoder.PendingTemplate]) {
        let variables = Set(profile.variables.map(\.name))
        let state = Set(profile.state.map(\.name))
        let characteristics = Set(profile.characteristics.map(\.id))
        for pending in templates {
            let checker = TemplateChecker(
                variables: variables, state: state, characteristics: characteristics, usage: pending.usage)
            for issue in checker.check(pending.template) {
                var location = pending.location
                location.column += 1 + issue.offset
                diagnostics.append(Diagnostic(at: location, path: pending.path, message: issue.message, hint: issue.hint))
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
