import Bluetooth
import ControlContract

/// A problem with a fault spec: where (JSON path and source location) and what.
public struct FaultSpecError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Malformed (400), naming something the profile does not have (404), or well-formed but not possible
    /// with this profile or the faults installed (409).
    public enum Kind: Sendable, Equatable { case invalid, notFound, conflict }

    public var path: String
    public var message: String
    public var location: SourceLocation?
    public var kind: Kind

    public init(path: String, message: String, location: SourceLocation? = nil, kind: Kind = .invalid) {
        self.path = path
        self.message = message
        self.location = location
        self.kind = kind
    }

    public var description: String { path.isEmpty ? message : "\(path): \(message)" }
}

/// Decodes fault specs from JSON (profile `faults`, scenario files and control API bodies share it).
public enum FaultSpecDecoder {
    static let scopeKeys = [
        "id", "on", "characteristic", "central", "nth", "count", "probability", "seed", "after", "description", "$comment",
    ]
    public static let actionKeys = [
        "delay", "drop", "error", "corrupt", "truncate", "duplicate", "reorder", "disconnect", "silence", "advertise", "powerCycle",
        "refuse",
        "wrongPasskey", "forgetBonds",
    ]

    /// Decodes a scenario: either an array of specs or `{"faults": [...]}`.
    public static func scenario(_ node: JSONNode, path: String = "") throws(FaultSpecError) -> [FaultSpec] {
        var list = node
        if case .object = node.value {
            guard let faults = node["faults"] else {
                throw FaultSpecError(
                    path: path, message: "a scenario is an array of faults or an object with \"faults\"", location: node.location)
            }
            list = faults
        }
        guard case .array(let items) = list.value else {
            throw FaultSpecError(path: path, message: "expected an array of faults, found \(list.value.kindName)", location: list.location)
        }
        var specs: [FaultSpec] = []
        for (index, item) in items.enumerated() {
            specs.append(try spec(item, path: "\(path.isEmpty ? "faults" : path)[\(index)]"))
        }
        return specs
    }

    /// Decodes one spec.
    public static func spec(_ node: JSONNode, path: String = "") throws(FaultSpecError) -> FaultSpec {
        func fail(_ at: JSONNode, _ key: String?, _ message: String) -> FaultSpecError {
            FaultSpecError(path: key.map { JSONPath.appending($0, to: path) } ?? path, message: message, location: at.location)
        }
        guard case .object(let members) = node.value else { throw fail(node, nil, "a fault is an object, found \(node.value.kindName)") }
        for member in members where !scopeKeys.contains(member.key) && !actionKeys.contains(member.key) {
            let hint = Suggestions.hint(for: member.key, in: scopeKeys + actionKeys).map { " (\($0))" } ?? ""
            throw fail(member.value, member.key, "unknown key \"\(member.key)\"\(hint)")
        }
        let actions = members.filter { actionKeys.contains($0.key) }
        guard actions.count == 1, let actionMember = actions.first else {
            throw fail(
                node, nil,
                actions.isEmpty
                    ? "a fault needs one action: " + actionKeys.joined(separator: ", ")
                    : "a fault takes one action, found " + actions.map(\.key).joined(separator: " and "))
        }
        let action = try self.action(actionMember.key, actionMember.value, fail: { fail(actionMember.value, actionMember.key, $0) })

        var on: FaultOperationKind
        if let node = node["on"] {
            guard let text = node.stringValue, let kind = FaultOperationKind(rawValue: text) else {
                throw fail(node, "on", "expected one of " + FaultOperationKind.allCases.map(\.rawValue).joined(separator: ", "))
            }
            on = kind
        } else if action.allowedOn.contains(.start) {
            on = .start
        } else if action.allowedOn == [.pair] {
            on = .pair
        } else {
            throw fail(node, "on", "missing \"on\": which operation (read, write, notify, indicate, connect, pair)")
        }
        guard action.allowedOn.contains(on) else {
            let allowed = FaultOperationKind.allCases.filter { action.allowedOn.contains($0) }.map(\.rawValue)
            throw fail(node, "on", "\"\(action.name)\" cannot apply to \"\(on.rawValue)\" (use it on \(allowed.joined(separator: ", ")))")
        }

        var scope = FaultScope()
        if let value = node["characteristic"] {
            guard let text = value.stringValue, !text.isEmpty else { throw fail(value, "characteristic", "expected a characteristic id") }
            scope.characteristic = text
        }
        if let value = node["central"] {
            guard let text = value.stringValue, isAddress(text) else {
                throw fail(value, "central", "expected an address like AA:BB:CC:DD:EE:FF")
            }
            scope.central = text.uppercased()
        }
        if let value = node["nth"] {
            guard let number = value.intValue, number >= 1, number <= Int(Int32.max) else {
                throw fail(value, "nth", "expected a whole number from 1 to 2147483647")
            }
            scope.nth = number
            scope.count = 1
        }
        if let value = node["count"] {
            guard let number = value.intValue, number >= 1, number <= Int(Int32.max) else {
                throw fail(value, "count", "expected a whole number from 1 to 2147483647")
            }
            scope.count = number
        }
        if let value = node["probability"] {
            guard case .number(let number) = value.value, number.double >= 0, number.double <= 1 else {
                throw fail(value, "probability", "expected a number from 0 to 1")
            }
            scope.probability = number.double
        }
        if let value = node["seed"] {
            guard case .number(let number) = value.value, let seed = UInt64(number.text) else {
                throw fail(value, "seed", "expected a whole number ≥ 0")
            }
            scope.seed = seed
        }
        if let value = node["after"] {
            guard on == .start else { throw fail(value, "after", "\"after\" is for \"on\": \"start\" only") }
            guard let ms = milliseconds(value) else { throw fail(value, "after", durationHint) }
            scope.afterMilliseconds = ms
        }
        if on == .start || on == .connect || on == .pair, scope.characteristic != nil {
            throw fail(node, "characteristic", "\"\(on.rawValue)\" faults are not about a characteristic")
        }
        var id: String?
        if let value = node["id"] {
            guard let text = value.stringValue, isIdentifier(text) else {
                throw fail(value, "id", "expected a name of letters, digits, '-' and '_'")
            }
            id = text
        }
        if let value = node["$comment"], value.stringValue == nil { throw fail(value, "$comment", "expected a string") }
        var description: String?
        if let value = node["description"] {
            guard let text = value.stringValue else { throw fail(value, "description", "expected a string") }
            description = text
        }
        return FaultSpec(id: id, on: on, scope: scope, action: action, description: description)
    }

    static let durationHint = "expected a duration: milliseconds (500), \"500ms\" or \"5s\""

    static func action(_ key: String, _ node: JSONNode, fail: (String) -> FaultSpecError) throws(FaultSpecError) -> FaultAction {
        func flag() throws(FaultSpecError) {
            guard node.boolValue == true else { throw fail("expected true") }
        }
        switch key {
        case "delay":
            if case .object(let members) = node.value {
                guard members.allSatisfy({ $0.key == "min" || $0.key == "max" }),
                    let min = node["min"].flatMap(milliseconds), let max = node["max"].flatMap(milliseconds)
                else {
                    throw fail("expected {\"min\": duration, \"max\": duration}")
                }
                return .delay(minMilliseconds: Swift.min(min, max), maxMilliseconds: Swift.max(min, max))
            }
            guard let ms = milliseconds(node) else { throw fail(durationHint + ", or {\"min\": …, \"max\": …}") }
            return .delay(minMilliseconds: ms, maxMilliseconds: ms)
        case "drop":
            try flag()
            return .drop
        case "error":
            guard let error = attError(node) else {
                throw fail(
                    "expected an ATT error: " + ATTError.namesInProfiles.keys.sorted().joined(separator: ", ")
                        + ", or an application code 0x80–0x9F")
            }
            return .error(error)
        case "corrupt":
            guard case .object(let members) = node.value else {
                throw fail("expected {\"flipBits\": n}, {\"at\": offset, \"hex\": bytes} or {\"at\": offset, \"xor\": mask}")
            }
            let keys = Set(members.map(\.key))
            guard keys == ["flipBits"] || keys == ["hex"] || keys == ["xor"] || keys == ["at", "hex"] || keys == ["at", "xor"] else {
                throw fail(
                    "expected {\"flipBits\": n}, {\"at\": offset, \"hex\": bytes} or {\"at\": offset, \"xor\": mask}, found keys "
                        + members.map(\.key).joined(separator: ", "))
            }
            if let flips = node["flipBits"] {
                guard let n = flips.intValue, n >= 1, n <= 4096 else { throw fail("flipBits: expected a whole number from 1 to 4096") }
                return .corrupt(.flipBits(n))
            }
            var at = 0
            if let atNode = node["at"] {
                guard let offset = atNode.intValue, offset >= 0, offset <= 512 else { throw fail("at: expected an offset from 0 to 512") }
                at = offset
            }
            if let hex = node["hex"] {
                guard let text = hex.stringValue, let bytes = parseHex(text), !bytes.isEmpty else {
                    throw fail("hex: expected hex bytes, e.g. \"ff 00\"")
                }
                return .corrupt(.replace(at: at, bytes: bytes))
            }
            if let xor = node["xor"] {
                guard let text = xor.stringValue, let bytes = parseHex(text), !bytes.isEmpty else {
                    throw fail("xor: expected a hex mask, e.g. \"01\"")
                }
                return .corrupt(.xor(at: at, mask: bytes))
            }
            throw fail("expected {\"flipBits\": n}, {\"at\": offset, \"hex\": bytes} or {\"at\": offset, \"xor\": mask}")
        case "truncate":
            guard let n = node.intValue, n >= 0, n <= 512 else { throw fail("expected the number of bytes to keep (0–512)") }
            return .truncate(n)
        case "duplicate":
            if node.boolValue == true { return .duplicate(copies: 1) }
            guard let n = node.intValue, n >= 1, n <= 100 else { throw fail("expected true or a number of extra copies (1–100)") }
            return .duplicate(copies: n)
        case "reorder":
            try flag()
            return .reorder
        case "disconnect":
            try flag()
            return .disconnect
        case "silence":
            guard let ms = milliseconds(node) else { throw fail(durationHint) }
            return .silence(milliseconds: ms)
        case "refuse":
            try flag()
            return .refusePairing
        case "wrongPasskey":
            try flag()
            return .wrongPasskey
        case "forgetBonds":
            try flag()
            return .forgetBonds
        case "advertise":
            if case .null = node.value { return .advertise(variant: nil) }
            guard let text = node.stringValue, !text.isEmpty else { throw fail("expected a variant name or null") }
            return .advertise(variant: text)
        default:  // powerCycle
            if node.boolValue == true { return .powerCycle(offMilliseconds: 1000) }
            guard let ms = milliseconds(node) else { throw fail("expected true or how long to stay off: " + durationHint) }
            return .powerCycle(offMilliseconds: ms)
        }
    }

    /// `500`, `"500ms"`, `"5s"`, `"1.5s"` → milliseconds (≤ 100,000,000, about 27.8 hours); exactly what
    /// the contract's `Duration` schema allows (`Patterns.duration`).
    public static func milliseconds(_ node: JSONNode) -> Int? {
        if case .number = node.value {
            guard let int = node.intValue else { return nil }
            return (0...Patterns.maximumMilliseconds).contains(int) ? int : nil
        }
        guard let text = node.stringValue else { return nil }
        return milliseconds(text)
    }

    public static func milliseconds(_ text: String) -> Int? { StrictParse.milliseconds(text) }

    /// A named ATT error (`not-authorized`) or an application code 0x80–0x9F (`"0x80"` or 128).
    public static func attError(_ node: JSONNode) -> ATTError? {
        if case .number = node.value {
            guard let int = node.intValue else { return nil }
            return (0x80...0x9F).contains(int) ? .application(UInt8(int)) : nil
        }
        guard let text = node.stringValue else { return nil }
        return attError(text)
    }

    public static func attError(_ text: String) -> ATTError? {
        if let named = ATTError.namesInProfiles[text] { return named }
        let bytes = Array(text.utf8)
        guard bytes.count == 4, bytes[0] == 0x30, bytes[1] == 0x78 || bytes[1] == 0x58,
            let code = StrictParse.hex(String(decoding: bytes[2...], as: UTF8.self))?.first, (0x80...0x9F).contains(code)
        else { return nil }
        return .application(code)
    }

    /// Hex bytes; spaces, `:` and `-` between bytes are allowed. Nil for anything else (odd digits, non-hex).
    public static func parseHex(_ text: String) -> [UInt8]? { StrictParse.hex(text) }

    static func isAddress(_ text: String) -> Bool { StrictParse.isAddress(text) }

    static func isIdentifier(_ text: String) -> Bool { StrictParse.isIdentifier(text) }
}
