import FoundationEssentials
import JSON

extension BehaviourEngine {
    mutating func matches(_ trigger: RuleTrigger, _ event: EngineEvent, arguments: [String: String]) -> Bool {
        switch (trigger, event) {
        case (.connect, .connect), (.disconnect, .disconnect):
            return true
        case (.read(let id), .read(let target, _, _)),
            (.subscribe(let id), .subscribe(let target, _)),
            (.unsubscribe(let id), .unsubscribe(let target, _)):
            return id == target
        case (.timer(let id), .timer(let target)), (.trigger(let id), .trigger(let target, _)):
            return id == target
        case (.write(let id, let matcher), .write(let target, _, let value, _)):
            return id == target && matches(matcher, value, event: event)
        case (.sdu(let id, let matcher), .sdu(let target, _, let value)):
            return id == target && matches(matcher, value, event: event)
        case (.channelOpen(let id), .channelOpen(let target, _)), (.channelClose(let id), .channelClose(let target, _)):
            return id == target
        default:
            return false
        }
    }

    private mutating func matches(_ matcher: WriteMatcher, _ value: [UInt8], event: EngineEvent) -> Bool {
        if let length = matcher.length, !length.contains(value.count) { return false }
        if let equals = matcher.equals, render(equals, event: event) != value { return false }
        if let prefix = matcher.prefix, !value.starts(with: render(prefix, event: event)) { return false }
        if let (mask, expected) = matcher.mask {
            guard value.count >= mask.count else { return false }
            for index in mask.indices where value[index] & mask[index] != expected[index] & mask[index] { return false }
        }
        if let pattern = matcher.regex, !pattern.matches(value) { return false }
        if let json = matcher.json, !Self.matches(json, value) { return false }
        return true
    }

    /// Decodes the value as UTF-8, removes the framing, parses JSON and checks the field.
    static func matches(_ matcher: JSONFieldMatcher, _ value: [UInt8]) -> Bool {
        guard var text = String(validating: value, as: UTF8.self) else { return false }
        for piece in matcher.removeFirst where !piece.isEmpty {
            if let range = text.firstRange(of: piece) { text.removeSubrange(range) }
        }
        if let prefix = matcher.stripPrefix, text.hasPrefix(prefix) { text.removeFirst(prefix.count) }
        if let suffix = matcher.stripSuffix, text.hasSuffix(suffix) { text.removeLast(suffix.count) }
        guard let root = try? JSONParser.parse(text, file: "") else { return false }
        var node: JSONNode? = root
        for key in matcher.field.split(separator: ".", omittingEmptySubsequences: false) {
            node = node?[String(key)]
        }
        switch matcher.condition {
        case .equals(let expected): return node?.plain == expected
        case .notEquals(let expected): return node != nil && node?.plain != expected
        case .exists: return node != nil
        case .absent: return node == nil
        }
    }

    func holds(_ condition: Condition, arguments: [String: String]) -> Bool {
        let actual: ProfileValue?
        switch condition.scope {
        case .state: actual = state[condition.name]
        case .variable: actual = variables[condition.name]
        case .argument:
            actual = arguments[condition.name].map { text in
                if case .number = condition.value, let number = Int(text) { return .number(number) }
                return .string(text)
            }
        }
        guard let actual else { return condition.comparison == .notEquals }
        switch condition.comparison {
        case .equals: return actual == condition.value
        case .notEquals: return actual != condition.value
        default:
            guard case .number(let a) = actual, case .number(let b) = condition.value else { return false }
            switch condition.comparison {
            case .less: return a < b
            case .lessOrEqual: return a <= b
            case .greater: return a > b
            default: return a >= b
            }
        }
    }
}
