import Bluetooth
import FaultCatalog
import JSON
import Lexical

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
        "id", "on", "characteristic", "central", "nth", "count", "probability", "seed", "after", "percent", "channel", "description",
        "$comment",
    ]
    /// The action keys: the kinds of ``FaultCatalog``.
    public static var actionKeys: [String] { FaultCatalog.names }

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
        let actionKeys = Self.actionKeys  // the catalog is built on each use: once per spec, not per member
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
        } else if let implicit = action.kind.implicitOperation {
            on = implicit
        } else {
            throw fail(
                node, "on",
                "missing \"on\": which operation (" + action.kind.operations.map(\.rawValue).joined(separator: ", ") + ")")
        }
        guard action.allowedOn.contains(on) else {
            let allowed = FaultOperationKind.allCases.filter { action.allowedOn.contains($0) }.map(\.rawValue)
            throw fail(node, "on", "\"\(action.name)\" cannot apply to \"\(on.rawValue)\" (use it on \(allowed.joined(separator: ", ")))")
        }

        var scope = FaultScope()
        if let value = node["characteristic"] {
            guard let text = value.stringValue, !text.isEmpty else { throw fail(value, "characteristic", "expected a characteristic id") }
            scope.characteristic = CharacteristicID(text)
        }
        if let value = node["central"] {
            guard let text = value.stringValue, isAddress(text), let address = BluetoothAddress(text) else {
                throw fail(value, "central", "expected an address like AA:BB:CC:DD:EE:FF")
            }
            scope.central = address
        }
        if let value = node["nth"] {
            guard let number = value.intValue, number >= 1, number <= FaultCatalog.maximumCount else {
                throw fail(value, "nth", "expected a whole number from 1 to \(FaultCatalog.maximumCount)")
            }
            scope.nth = number
            scope.count = 1
        }
        if let value = node["count"] {
            guard let number = value.intValue, number >= 1, number <= FaultCatalog.maximumCount else {
                throw fail(value, "count", "expected a whole number from 1 to \(FaultCatalog.maximumCount)")
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
        if let value = node["percent"] {
            guard on == .upload else { throw fail(value, "percent", "\"percent\" is for \"on\": \"upload\" only") }
            guard let number = value.intValue, FaultCatalog.percentages.contains(number) else {
                throw fail(value, "percent", "expected a whole number from 0 to 100 (the share of the image the chunk reaches)")
            }
            scope.percent = number
        }
        if let value = node["channel"] {
            guard on.isAboutChannel else { throw fail(value, "channel", "\"\(on.rawValue)\" faults are not about an L2CAP channel") }
            guard let text = value.stringValue, isIdentifier(text) else { throw fail(value, "channel", "expected a channel id") }
            scope.channel = text
        }
        if !on.isAboutCharacteristic, scope.characteristic != nil {
            throw fail(node, "characteristic", "\"\(on.rawValue)\" faults are not about a characteristic")
        }
        if case .refuse(let refusal?) = action {
            guard on == .channel else {
                throw fail(actionMember.value, actionMember.key, "a result is for \"on\": \"channel\"; a pairing is refused with true")
            }
            for key in ["nth", "count", "central", "probability"] where !refusal.isPerRequest {
                if let value = node[key] {
                    throw fail(
                        value, key,
                        "\"refuse\": \"\(refusal.rawValue)\" is the kernel's answer to every request on the channel while the fault is"
                            + " installed, given before gattemu sees one: \"\(key)\" cannot choose requests (remove the fault to end it)")
                }
            }
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

    /// The action of `key`: its value checked against the kind's grammar in ``FaultCatalog``, then read.
    static func action(_ key: String, _ node: JSONNode, fail: (String) -> FaultSpecError) throws(FaultSpecError) -> FaultAction {
        guard let kind = FaultCatalog.kind(named: key) else { throw fail("unknown action \"\(key)\"") }
        if let problem = kind.parameter.problem(node) { throw fail(problem) }
        // Checked: each value below is present and in bounds.
        func int(_ node: JSONNode?) -> Int { node?.intValue ?? 0 }
        func ms(_ node: JSONNode?) -> Int { node.flatMap(milliseconds) ?? 0 }
        switch key {
        case "delay":
            if case .object = node.value {
                let (min, max) = (ms(node["min"]), ms(node["max"]))
                return .delay(minMilliseconds: Swift.min(min, max), maxMilliseconds: Swift.max(min, max))
            }
            return .delay(minMilliseconds: ms(node), maxMilliseconds: ms(node))
        case "drop": return .drop
        case "error": return .error(attError(node) ?? .failed)
        case "corrupt":
            if let flips = node["flipBits"] { return .corrupt(.flipBits(int(flips))) }
            if let hex = node["hex"] { return .corrupt(.replace(at: int(node["at"]), bytes: hexBytes(hex) ?? [])) }
            return .corrupt(.xor(at: int(node["at"]), mask: node["xor"].flatMap(hexBytes) ?? []))
        case "truncate": return .truncate(int(node))
        case "rewrite":
            let (match, replace) = (node["match"].flatMap(valueBytes) ?? [], node["replace"].flatMap(valueBytes) ?? [])
            for (name, bytes) in [("match", match), ("replace", replace)] where bytes.count > FaultCatalog.maximumValueBytes {
                var error = fail("\(name): \(bytes.count) bytes, over the \(FaultCatalog.maximumValueBytes)-byte value limit")
                error.kind = .conflict
                throw error
            }
            return .rewrite(match: match, replace: replace, all: node["all"]?.boolValue ?? true)
        case "duplicate": return .duplicate(copies: node.boolValue == true ? 1 : int(node))
        case "reorder": return .reorder
        case "disconnect": return .disconnect
        case "silence": return .silence(milliseconds: ms(node))
        case "refuse": return .refuse(node.stringValue.flatMap(LECreditBasedChannel.Refusal.init(rawValue:)))
        case "wrongPasskey": return .wrongPasskey
        case "forgetBonds": return .forgetBonds
        case "smpError": return .smpError(int(node))
        case "wrongHash": return .wrongHash
        case "losePending": return .losePending
        case "closeChannel": return .closeChannel
        case "advertise": return .advertise(variant: node.stringValue)
        case "powerCycle":
            return .powerCycle(offMilliseconds: node.boolValue == true ? FaultCatalog.defaultPowerOffMilliseconds : ms(node))
        default: throw fail("\"\(key)\" is in the fault catalog but not decoded")
        }
    }

    /// A byte parameter (`corrupt`'s `hex` and `xor`): the profile's hex grammar (``ValueForm/hex``, so `"0x01"` as in a
    /// profile value), at least one byte, at most ``FaultCatalog/maximumHexCharacters`` characters.
    static func hexBytes(_ node: JSONNode) -> [UInt8]? {
        guard let text = node.stringValue, text.unicodeScalars.count <= FaultCatalog.maximumHexCharacters,
            let bytes = parseHex(text), !bytes.isEmpty
        else { return nil }
        return bytes
    }

    /// A value in the one value grammar (``ValueForm``): hex text as in a profile, or `{"hex": …}`, `{"utf8": …}` or
    /// `{"base64": …}`, its text at most the form's ``ValueForm/textLimit`` scalars; nil for anything else. Its byte
    /// count is the caller's to bound.
    static func valueBytes(_ node: JSONNode) -> [UInt8]? {
        var form = ValueForm.hex
        var text = node.stringValue
        if case .object(let members) = node.value {
            guard members.count == 1, let member = members.first, let named = ValueForm(rawValue: member.key) else { return nil }
            form = named
            text = member.value.stringValue
        }
        guard let text, text.unicodeScalars.count <= form.textLimit else { return nil }
        return form.bytes(text)
    }

    /// `500`, `"500ms"`, `"5s"`, `"1.5s"` → milliseconds (≤ 100,000,000, about 27.8 hours); exactly what
    /// the contract's `Duration` schema allows (``Patterns/duration``).
    public static func milliseconds(_ node: JSONNode) -> Int? {
        if case .number = node.value {
            guard let int = node.intValue else { return nil }
            return (0...ValueLimits.maximumMilliseconds).contains(int) ? int : nil
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
        return StrictParse.applicationError(text).map { .application($0) }
    }

    /// Hex bytes, written as in a profile's `{"hex": …}` value (``ValueForm/hex``). Nil for anything else.
    public static func parseHex(_ text: String) -> [UInt8]? { ValueForm.hex.bytes(text) }

    static func isAddress(_ text: String) -> Bool { StrictParse.isAddress(text) }

    static func isIdentifier(_ text: String) -> Bool { StrictParse.isIdentifier(text) }
}
