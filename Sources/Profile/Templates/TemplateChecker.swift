import Lexical

/// Where a template is used, which limits what it may refer to.
public enum TemplateUsage: Sendable, Equatable {
    /// Device and advertisement fields: variables, state and the adapter address only.
    case advertisement
    /// Initial characteristic and descriptor values: also `random`, `counter`, `value`.
    case initialValue
    /// Rule actions and matchers: everything, including `request`, `central` and `arg`.
    case rule
}

/// A problem found by statically checking a template.
public struct TemplateIssue: Sendable, Equatable {
    public var offset: Int
    public var message: String
    public var hint: String?
}

/// Checks a parsed template against the names a profile declares.
struct TemplateChecker {
    var variables: Set<String>
    var state: Set<String>
    var characteristics: Set<String>
    var usage: TemplateUsage
    /// Bounds the work of "did you mean" hints, shared by every template of a profile.
    var suggestions = SuggestionBudget()

    func check(_ template: Template) -> [TemplateIssue] {
        var issues: [TemplateIssue] = []
        for part in template.parts {
            guard case .expression(let expression, _) = part else { continue }
            if template.kind == .bytes, case .call("pad", let arguments, let offset) = expression {
                checkPad(arguments, offset: offset, into: &issues)
                continue
            }
            check(expression, into: &issues)
            guard template.kind == .bytes else { continue }
            switch expression {
            case .integer(let n, let offset) where n > 255:
                issues.append(
                    TemplateIssue(
                        offset: offset, message: "\(n) does not fit in one byte",
                        hint: "write u16le(\(n)) or u16be(\(n)) for a wider integer"))
            case .call("crc16", _, let offset):
                issues.append(
                    TemplateIssue(
                        offset: offset, message: "crc16() is 16 bits and would be cut to one byte",
                        hint: "write u16be(crc16(…)) or u16le(crc16(…))"))
            default: break
            }
        }
        return issues
    }

    private static let addressNames: Set<String> = ["address", "addressWithColons", "addressBytes"]
    private static let ruleNames = Set(TemplateBuiltins.names.keys)

    private var allowedBuiltins: Set<String> {
        switch usage {
        case .advertisement, .initialValue: Self.addressNames
        case .rule: Self.ruleNames
        }
    }

    private var knownNames: [String] { allowedBuiltins.sorted() + variables.sorted() + state.sorted() }

    private func checkName(_ name: String, offset: Int, into issues: inout [TemplateIssue]) {
        if allowedBuiltins.contains(name) || variables.contains(name) || state.contains(name) { return }
        if TemplateBuiltins.names[name] != nil {
            issues.append(TemplateIssue(offset: offset, message: "\(name) cannot be used here", hint: usageHint))
        } else {
            issues.append(
                TemplateIssue(
                    offset: offset, message: "unknown name \"\(name)\"",
                    hint: Suggestions.hint(for: name, in: { knownNames }, budget: suggestions)))
        }
    }

    private var usageHint: String {
        switch usage {
        case .advertisement: "advertisement and device fields may use variables, state and the adapter address"
        case .initialValue: "initial values may not use request, central or arg"
        case .rule: ""
        }
    }

    private func checkPad(_ arguments: [TemplateExpression], offset: Int, into issues: inout [TemplateIssue]) {
        guard (1...2).contains(arguments.count) else {
            issues.append(TemplateIssue(offset: offset, message: "pad() takes 1 or 2 arguments (length, fill byte)"))
            return
        }
        if case .integer(let n, let argumentOffset) = arguments[0], n > TemplateBuiltins.maximumLength {
            issues.append(
                TemplateIssue(
                    offset: argumentOffset, message: "pad length \(n) exceeds \(TemplateBuiltins.maximumLength)"))
        }
        for argument in arguments { check(argument, into: &issues) }
    }

    private func check(_ expression: TemplateExpression, into issues: inout [TemplateIssue]) {
        switch expression {
        case .integer, .string:
            break
        case .name(let name, let offset), .index(let name, _, let offset), .slice(let name, _, _, let offset):
            checkName(name, offset: offset, into: &issues)
        case .binary(_, let lhs, let rhs, _):
            check(lhs, into: &issues)
            check(rhs, into: &issues)
        case .call(let name, let arguments, let offset):
            checkCall(name, arguments, offset: offset, into: &issues)
        }
    }

    private func checkCall(
        _ name: String, _ arguments: [TemplateExpression], offset: Int, into issues: inout [TemplateIssue]
    ) {
        guard let arity = TemplateBuiltins.functions[name] else {
            let hint = Suggestions.hint(for: name, in: TemplateBuiltins.functions.keys.sorted())
            issues.append(TemplateIssue(offset: offset, message: "unknown function \(name)()", hint: hint))
            return
        }
        guard arity.contains(arguments.count) else {
            let expected = arity.count == 1 ? "\(arity.lowerBound)" : "\(arity.lowerBound) to \(arity.upperBound)"
            issues.append(
                TemplateIssue(
                    offset: offset,
                    message: "\(name)() takes \(expected) argument\(arity.upperBound == 1 ? "" : "s"), not \(arguments.count)"))
            return
        }
        if usage == .advertisement, ["random", "counter", "value"].contains(name) {
            issues.append(TemplateIssue(offset: offset, message: "\(name)() cannot be used here", hint: usageHint))
            return
        }
        switch name {
        case "pad":
            issues.append(
                TemplateIssue(
                    offset: offset, message: "pad() can only stand on its own in a byte template",
                    hint: "it pads everything before it, e.g. \"51 60 {pad(20)}\""))
        case "arg" where usage != .rule:
            issues.append(TemplateIssue(offset: offset, message: "arg() can only be used in rules"))
        case "random":
            guard case .integer(let n, _) = arguments[0], n <= TemplateBuiltins.maximumLength else {
                issues.append(
                    TemplateIssue(
                        offset: arguments[0].offset,
                        message: "random() needs a byte count from 0 to \(TemplateBuiltins.maximumLength)"))
                return
            }
        case "counter":
            if case .name = arguments[0] {
            } else {
                issues.append(
                    TemplateIssue(
                        offset: arguments[0].offset, message: "counter() takes a counter name, e.g. counter(sequence)"))
            }
            return
        case "value":
            guard case .name(let id, let argumentOffset) = arguments[0] else {
                issues.append(
                    TemplateIssue(
                        offset: arguments[0].offset, message: "value() takes a characteristic id, e.g. value(tx)"))
                return
            }
            if !characteristics.contains(id) {
                issues.append(
                    TemplateIssue(
                        offset: argumentOffset, message: "unknown characteristic \"\(id)\"",
                        hint: Suggestions.hint(for: id, in: { characteristics.sorted() }, budget: suggestions)))
            }
            return
        case "arg":
            guard case .string = arguments[0] else {
                issues.append(TemplateIssue(offset: arguments[0].offset, message: "arg() takes a quoted argument name"))
                return
            }
        case "hex":
            guard case .string(let text, let argumentOffset) = arguments[0] else {
                issues.append(TemplateIssue(offset: arguments[0].offset, message: "hex() takes a quoted hex string"))
                return
            }
            if ValueForm.hex.bytes(text) == nil {
                issues.append(TemplateIssue(offset: argumentOffset, message: "\"\(text)\" is not valid hex"))
            }
        case "fill":
            if case .integer(let n, let argumentOffset) = arguments[1], n > TemplateBuiltins.maximumLength {
                issues.append(
                    TemplateIssue(
                        offset: argumentOffset, message: "fill count \(n) exceeds \(TemplateBuiltins.maximumLength)"))
            }
        default:
            break
        }
        for argument in arguments { check(argument, into: &issues) }
    }
}
