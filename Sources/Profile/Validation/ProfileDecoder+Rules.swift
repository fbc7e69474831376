import Bluetooth
import JSON

extension ProfileDecoder {
    static let triggerKinds = [
        "read", "write", "subscribe", "unsubscribe", "connect", "disconnect", "timer", "trigger", "open", "sdu", "close",
    ]
    static let writeMatcherKeys = ["equals", "prefix", "mask", "length", "regex", "json", "closestTo"]
    static let actionKinds = [
        "reply", "succeed", "fail", "notify", "indicate", "setValue", "set", "delay", "advertise",
        "startAdvertising", "stopAdvertising", "disconnect", "startTimer", "cancelTimer", "log", "send", "stream",
        "closeChannel",
    ]
    /// Keys an action object may have besides its kind, and the kinds each applies to.
    static let actionOptions = ["value", "to", "after", "bytes", "file"]
    static let actionOptionsByKind: [String: [String]] = [
        "notify": ["value", "to"], "indicate": ["value", "to"], "setValue": ["value"], "startTimer": ["after"],
        "send": ["value"], "stream": ["bytes", "file"],
    ]
    static let actionKeys = actionKinds + actionOptions

    mutating func rule(_ node: JSONNode, _ path: String, index: Int) -> Rule? {
        guard members(node, path, allowed: ["id", "on", "when", "do", "stop", "otherwise", "description"]) != nil
        else { return nil }
        documentation(node, path)
        func sub(_ key: String) -> String { JSONPath.appending(key, to: path) }
        let id = node["id"].flatMap { identifier($0, sub("id")) } ?? "rules[\(index)]"
        let parsedTrigger = required(node, "on", path).flatMap { self.trigger($0, sub("on")) }
        var conditions: [Condition] = []
        if let when = node["when"] {
            let items: [(JSONNode, String)]
            if case .array(let list) = when.value {
                items = list.enumerated().map { ($1, JSONPath.appending($0, to: sub("when"))) }
            } else {
                items = [(when, sub("when"))]
            }
            conditions = items.compactMap { self.condition($0.0, $0.1) }
        }
        var actions: [Action] = []
        if let doNode = required(node, "do", path) {
            if case .array(let list) = doNode.value {
                for (index, item) in list.enumerated() {
                    actions += action(item, JSONPath.appending(index, to: sub("do")))
                }
            } else {
                actions = action(doNode, sub("do"))
            }
        }
        let stop = node["stop"].flatMap { bool($0, sub("stop")) } ?? false
        let otherwise = node["otherwise"].flatMap { bool($0, sub("otherwise")) } ?? false
        guard let parsedTrigger else { return nil }
        return Rule(
            id: id, trigger: parsedTrigger, conditions: conditions, actions: actions, stop: stop, otherwise: otherwise,
            path: path)
    }

    mutating func trigger(_ node: JSONNode, _ path: String) -> RuleTrigger? {
        if case .string(let text) = node.value {
            switch text {
            case "connect": return .connect
            case "disconnect": return .disconnect
            default:
                error(
                    node, path, "unknown trigger \"\(text)\"",
                    hint: Suggestions.hint(for: text, in: ["connect", "disconnect"])
                        ?? "write \"connect\", \"disconnect\" or an object such as {\"write\": \"rx\"}")
                return nil
            }
        }
        guard let members = members(node, path, allowed: Self.triggerKinds + Self.writeMatcherKeys) else { return nil }
        let kinds = members.filter { Self.triggerKinds.contains($0.key) }
        let allowed = Self.triggerKinds + Self.writeMatcherKeys + ["$comment"]
        // An unknown key (already reported, with a suggestion) is most likely the misspelt trigger.
        if kinds.isEmpty, members.contains(where: { !allowed.contains($0.key) }) { return nil }
        guard kinds.count == 1, let kind = kinds.first else {
            error(
                node, path,
                kinds.isEmpty
                    ? "a trigger needs one of \(Self.triggerKinds.map { "\"\($0)\"" }.joined(separator: ", "))"
                    : "a trigger takes only one of \(kinds.map { "\"\($0.key)\"" }.joined(separator: ", "))")
            return nil
        }
        let kindPath = JSONPath.appending(kind.key, to: path)
        if kind.key != "write" && kind.key != "sdu" {
            for member in members where Self.writeMatcherKeys.contains(member.key) {
                error(
                    at: member.keyLocation, JSONPath.appending(member.key, to: path),
                    "\"\(member.key)\" only applies to write and sdu triggers")
            }
        }
        switch kind.key {
        case "connect", "disconnect":
            guard bool(kind.value, kindPath) == true else {
                if case .bool = kind.value.value { error(kind.value, kindPath, "write true or leave the trigger out") }
                return nil
            }
            return kind.key == "connect" ? .connect : .disconnect
        case "write":
            guard let id = characteristicID(kind.value, kindPath) else { return nil }
            return .write(id, writeMatcher(node, path))
        case "sdu":
            guard let id = identifier(kind.value, kindPath) else { return nil }
            return .sdu(id, writeMatcher(node, path, limit: ProfileLimits.valueLength))
        case "open":
            return identifier(kind.value, kindPath).map { .channelOpen($0) }
        case "close":
            return identifier(kind.value, kindPath).map { .channelClose($0) }
        default:
            switch kind.key {
            case "read": return characteristicID(kind.value, kindPath).map { .read($0) }
            case "subscribe": return characteristicID(kind.value, kindPath).map { .subscribe($0) }
            case "unsubscribe": return characteristicID(kind.value, kindPath).map { .unsubscribe($0) }
            case "timer": return identifier(kind.value, kindPath).map { .timer($0) }
            default: return identifier(kind.value, kindPath).map { .trigger($0) }
            }
        }
    }

    /// `limit`: the most bytes of a literal to match (an attribute's; an SDU's, ``ProfileLimits/valueLength``).
    mutating func writeMatcher(_ node: JSONNode, _ path: String, limit: Int = ATTMTU.maximumValueLength) -> WriteMatcher {
        var matcher = WriteMatcher()
        func sub(_ key: String) -> String { JSONPath.appending(key, to: path) }
        if let value = node["equals"] { matcher.equals = valueSource(value, sub("equals"), usage: .rule, limit: limit)?.template }
        if let value = node["prefix"] { matcher.prefix = valueSource(value, sub("prefix"), usage: .rule, limit: limit)?.template }
        if let value = node["mask"], members(value, sub("mask"), allowed: ["bits", "equals"]) != nil {
            let maskPath = sub("mask")
            func maskBytes(_ key: String) -> [UInt8]? {
                let keyPath = JSONPath.appending(key, to: maskPath)
                guard let node = required(value, key, maskPath), let bytes = literalBytes("hex", node, keyPath) else { return nil }
                return attributeSized(bytes, node, keyPath)
            }
            let bits = maskBytes("bits")
            let expected = maskBytes("equals")
            if let bits, let expected {
                if bits.count == expected.count {
                    matcher.mask = (bits, expected)
                } else {
                    error(value, maskPath, "\"bits\" has \(bits.count) bytes but \"equals\" has \(expected.count)")
                }
            }
        }
        if let value = node["length"] {
            let lengthPath = sub("length")
            if case .object = value.value {
                if members(value, lengthPath, allowed: ["min", "max"]) != nil {
                    let low =
                        value["min"].flatMap { integer($0, JSONPath.appending("min", to: lengthPath), in: 0...ATTMTU.maximumValueLength) }
                        ?? 0
                    let high =
                        value["max"].flatMap { integer($0, JSONPath.appending("max", to: lengthPath), in: 0...ATTMTU.maximumValueLength) }
                        ?? ATTMTU.maximumValueLength
                    if low <= high {
                        matcher.length = low...high
                    } else {
                        error(value, lengthPath, "length min \(low) is greater than max \(high)")
                    }
                }
            } else if let exact = integer(value, lengthPath, in: 0...ATTMTU.maximumValueLength) {
                matcher.length = exact...exact
            }
        }
        if let value = node["regex"], let pattern = string(value, sub("regex")) {
            do {
                matcher.regex = try BytePattern(pattern)
            } catch {
                self.error(
                    at: Self.location(in: value, scalarOffset: error.offset), sub("regex"),
                    "invalid regular expression: \(error.message)", hint: error.hint)
            }
        }
        if let value = node["json"] { matcher.json = jsonMatcher(value, sub("json")) }
        if let value = node["closestTo"], let source = valueSource(value, sub("closestTo"), usage: .rule) {
            if let bytes = source.template.literalBytes {
                matcher.closestTo = attributeSized(bytes, value, sub("closestTo"))
            } else {
                error(value, sub("closestTo"), "closestTo takes fixed bytes", hint: "write them as hex, e.g. {\"hex\": \"51 60\"}")
            }
        }
        return matcher
    }

    mutating func jsonMatcher(_ node: JSONNode, _ path: String) -> JSONFieldMatcher? {
        let conditionKeys = ["equals", "notEquals", "exists", "absent"]
        guard let members = members(node, path, allowed: ["removeFirst", "stripPrefix", "stripSuffix", "field"] + conditionKeys)
        else { return nil }
        func sub(_ key: String) -> String { JSONPath.appending(key, to: path) }
        var removeFirst: [String] = []
        if let value = node["removeFirst"], let items = array(value, sub("removeFirst")) {
            removeFirst = items.enumerated().compactMap { string($1, JSONPath.appending($0, to: sub("removeFirst"))) }
        }
        let stripPrefix = node["stripPrefix"].flatMap { string($0, sub("stripPrefix")) }
        let stripSuffix = node["stripSuffix"].flatMap { string($0, sub("stripSuffix")) }
        let field = required(node, "field", path).flatMap { string($0, sub("field")) }
        let conditions = members.filter { conditionKeys.contains($0.key) }
        guard conditions.count == 1, let condition = conditions.first else {
            error(node, path, "a json matcher needs exactly one of \"equals\", \"notEquals\", \"exists\", \"absent\"")
            return nil
        }
        let parsed: JSONFieldMatcher.Condition
        switch condition.key {
        case "equals": parsed = .equals(condition.value.plain)
        case "notEquals": parsed = .notEquals(condition.value.plain)
        case "exists", "absent":
            // Only `true`: a false one would match nothing it says, and used to leave the rule matching every write.
            let other = condition.key == "exists" ? "absent" : "exists"
            guard let flag = bool(condition.value, sub(condition.key)) else { return nil }
            guard flag else {
                error(
                    condition.value, sub(condition.key), "\"\(condition.key)\" takes true",
                    hint: "for the opposite, write \"\(other)\": true")
                return nil
            }
            parsed = condition.key == "exists" ? .exists : .absent
        default:
            return nil
        }
        guard let field else { return nil }
        guard !field.isEmpty else {
            error(node["field"] ?? node, sub("field"), "an empty field names nothing", hint: "a dotted path, e.g. \"a.b\"")
            return nil
        }
        return JSONFieldMatcher(
            removeFirst: removeFirst, stripPrefix: stripPrefix, stripSuffix: stripSuffix, field: field, condition: parsed)
    }

    mutating func condition(_ node: JSONNode, _ path: String) -> Condition? {
        let scopes = ["state", "variable", "argument"]
        let comparisons = Condition.Comparison.allCases.map(\.rawValue)
        guard let members = members(node, path, allowed: scopes + comparisons) else { return nil }
        let scopeMembers = members.filter { scopes.contains($0.key) }
        let comparisonMembers = members.filter { comparisons.contains($0.key) }
        guard scopeMembers.count == 1, let scope = scopeMembers.first else {
            error(node, path, "a condition needs exactly one of \"state\", \"variable\", \"argument\"")
            return nil
        }
        guard comparisonMembers.count == 1, let comparison = comparisonMembers.first else {
            error(node, path, "a condition needs exactly one of \(comparisons.map { "\"\($0)\"" }.joined(separator: ", "))")
            return nil
        }
        guard let name = identifier(scope.value, JSONPath.appending(scope.key, to: path)),
            let value = profileValue(comparison.value, JSONPath.appending(comparison.key, to: path)),
            let scopeValue = Condition.Scope(rawValue: scope.key),
            let comparisonValue = Condition.Comparison(rawValue: comparison.key)
        else { return nil }
        return Condition(
            scope: scopeValue, name: name, comparison: comparisonValue, value: value, path: path)
    }
}
