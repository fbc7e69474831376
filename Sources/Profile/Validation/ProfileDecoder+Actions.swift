import JSON

extension ProfileDecoder {
    /// One action object; `set` with several names gives several actions.
    mutating func action(_ node: JSONNode, _ path: String) -> [Action] {
        guard let members = members(node, path, allowed: Self.actionKeys) else { return [] }
        let kinds = members.filter { Self.actionKinds.contains($0.key) }
        if kinds.isEmpty, members.contains(where: { $0.key != "$comment" && !Self.actionKeys.contains($0.key) }) { return [] }
        guard kinds.count == 1, let kind = kinds.first else {
            error(
                node, path,
                kinds.isEmpty
                    ? "an action needs one of \(Self.actionKinds.map { "\"\($0)\"" }.joined(separator: ", "))"
                    : "an action takes only one of \(kinds.map { "\"\($0.key)\"" }.joined(separator: ", "))")
            return []
        }
        let kindPath = JSONPath.appending(kind.key, to: path)
        func sub(_ key: String) -> String { JSONPath.appending(key, to: path) }
        for member in members
        where Self.actionOptions.contains(member.key)
            && !(Self.actionOptionsByKind[kind.key] ?? []).contains(member.key)
        {
            error(at: member.keyLocation, sub(member.key), "\"\(member.key)\" does not apply to a \"\(kind.key)\" action")
        }
        func make(_ kind: Action.Kind) -> [Action] { [Action(kind: kind, path: kindPath)] }
        func requireTrue() -> Bool {
            guard let value = bool(kind.value, kindPath) else { return false }
            if !value { error(kind.value, kindPath, "write true or leave the action out") }
            return value
        }
        switch kind.key {
        case "reply":
            return valueSource(kind.value, kindPath, usage: .rule).map { make(.reply($0.template)) } ?? []
        case "succeed":
            return requireTrue() ? make(.succeed) : []
        case "fail":
            return attError(kind.value, kindPath).map { make(.fail($0)) } ?? []
        case "notify", "indicate":
            guard let id = characteristicID(kind.value, kindPath) else { return [] }
            guard let valueNode = required(node, "value", path),
                let value = valueSource(valueNode, sub("value"), usage: .rule)
            else { return [] }
            var toAll = false
            if let to = node["to"], let target = string(to, sub("to")) {
                switch target {
                case "all": toAll = true
                case "central": toAll = false
                default:
                    error(to, sub("to"), "unknown target \"\(target)\"", hint: "use \"central\" (the default) or \"all\"")
                }
            }
            return make(.notify(characteristic: id, value: value.template, toAll: toAll, indicate: kind.key == "indicate"))
        case "setValue":
            guard let id = characteristicID(kind.value, kindPath),
                let valueNode = required(node, "value", path),
                let value = valueSource(valueNode, sub("value"), usage: .rule)
            else { return [] }
            return make(.setValue(characteristic: id, value: value.template))
        case "set":
            guard case .object(let assignments) = kind.value.value else {
                typeError(kind.value, kindPath, expected: "an object of name → value")
                return []
            }
            return assignments.compactMap { member in
                let memberPath = JSONPath.appending(member.key, to: kindPath)
                guard Self.isIdentifier(member.key) else {
                    error(at: member.keyLocation, memberPath, "\"\(member.key)\" is not a valid name")
                    return nil
                }
                guard let assignment = assignment(member.value, memberPath) else { return nil }
                return Action(kind: .set(name: member.key, value: assignment), path: memberPath)
            }
        case "delay":
            return duration(kind.value, kindPath).map { make(.delay($0)) } ?? []
        case "advertise":
            if case .null = kind.value.value { return make(.advertise(variant: nil)) }
            guard let name = identifier(kind.value, kindPath) else { return [] }
            return make(.advertise(variant: name == "base" ? nil : name))
        case "startAdvertising":
            return requireTrue() ? make(.startAdvertising) : []
        case "stopAdvertising":
            return requireTrue() ? make(.stopAdvertising) : []
        case "disconnect":
            return requireTrue() ? make(.disconnect) : []
        case "startTimer":
            guard let id = identifier(kind.value, kindPath) else { return [] }
            let after = node["after"].flatMap { timerDuration($0, sub("after")) }
            return make(.startTimer(id, after: after))
        case "cancelTimer":
            return identifier(kind.value, kindPath).map { make(.cancelTimer($0)) } ?? []
        case "send":
            guard let id = identifier(kind.value, kindPath),
                let valueNode = required(node, "value", path),
                let value = valueSource(valueNode, sub("value"), usage: .rule, limit: ProfileLimits.valueLength)
            else { return [] }
            return make(.send(channel: id, value: value.template))
        case "stream":
            guard let id = identifier(kind.value, kindPath) else { return [] }
            switch (node["bytes"], node["file"]) {
            case (let bytes?, nil):
                guard let count = integer(bytes, sub("bytes"), in: 1...StreamSource.maximumPatternBytes) else { return [] }
                return make(.stream(channel: id, source: .pattern(bytes: count)))
            case (nil, let file?):
                guard let name = string(file, sub("file")) else { return [] }
                guard !name.isEmpty, !name.utf8.contains(0) else {
                    error(file, sub("file"), "a file name cannot be empty or hold NUL")
                    return []
                }
                return make(.stream(channel: id, source: .file(name)))
            case (_?, _?):
                error(node, path, "a stream takes \"bytes\" or \"file\", not both")
                return []
            case (nil, nil):
                error(node, path, "a stream needs \"bytes\" (a counting pattern) or \"file\" (its contents)")
                return []
            }
        case "closeChannel":
            return identifier(kind.value, kindPath).map { make(.closeChannel($0)) } ?? []
        default:  // log
            return template(kind.value, kindPath, kind: .text, usage: .rule).map { make(.log($0)) } ?? []
        }
    }

    /// The value of a `set`: a literal, `{"template": "…"}` (bytes) or `{"increment": n}`.
    mutating func assignment(_ node: JSONNode, _ path: String) -> Action.Assignment? {
        if case .object(let members) = node.value, let first = members.first,
            first.key == "template" || first.key == "increment"
        {
            guard self.members(node, path, allowed: [first.key]) != nil else { return nil }
            let valuePath = JSONPath.appending(first.key, to: path)
            if first.key == "increment" {
                return integer(first.value, valuePath, in: Int(Int32.min)...Int(Int32.max)).map { .increment($0) }
            }
            return template(first.value, valuePath, kind: .bytes, usage: .rule).map { .template($0) }
        }
        return profileValue(node, path).map { .literal($0) }
    }
}
