import Bluetooth
import JSON

/// A validated device profile: GATT table, advertisements, variables, state, timers and rules.
///
/// Load one with `ProfileLoader.load(path:overrides:)`. It keeps its source tree, so code outside this
/// module can report located problems with `diagnostic(at:message:hint:)`.
public struct DeviceProfile: Sendable {
    /// The file it was loaded from, as named to the loader.
    public var file: String
    public var description: String?
    public var device: DeviceDefinition
    public var advertisements: [AdvertisementDefinition]
    public var services: [ServiceDefinition]
    /// Configuration values in file order (overridable with `--set variables.name=value`).
    public var variables: [NamedValue]
    /// Runtime state values in file order, with their initial values.
    public var state: [NamedValue]
    /// State values kept per central (`"connectionState"`): each central sees its own copy, set to the
    /// initial value when it connects.
    public var connectionState: [String] = []
    /// Named triggers the control API may fire, with their descriptions.
    public var triggers: [NamedTrigger]
    public var timers: [TimerDefinition]
    public var rules: [Rule]
    /// The merged JSON the profile was decoded from (after `extends` and `--set`), for ``location(of:)``.
    var sourceTree: JSONNode?
    /// Faults injected from the start (`"faults"`; see `docs/control.md`).
    public var faults: [FaultSpec] = []
    /// The `"security"` section as written; see ``pairingSecurity`` for what applies.
    public var security: SecurityDefinition?
    /// The `"firmware"` section: the device is a firmware-update target (SMP over its characteristic).
    public var firmware: FirmwareDefinition?
    /// The `"channels"` section: L2CAP connection-oriented channels the device listens on.
    public var channels: [ChannelDefinition] = []

    /// Where the value at a JSON path (e.g. `advertisements[0].localName`) was written, if known; a path
    /// that goes deeper than the file gives the nearest enclosing value's place.
    public func location(of jsonPath: String) -> SourceLocation? {
        guard let tree = sourceTree else { return nil }
        if jsonPath.isEmpty { return tree.location }
        guard let components = JSONPath.components(of: jsonPath) else { return nil }
        var node = tree
        var matched = 0
        for component in components {
            let next: JSONNode? =
                switch component {
                case .key(let key): node[key]
                case .index(let index): node.arrayItems.flatMap { $0.indices.contains(index) ? $0[index] : nil }
                }
            guard let next else { break }
            node = next
            matched += 1
        }
        return matched > 0 ? node.location : nil
    }

    /// A diagnostic located at a JSON path, for checks done outside this module (e.g. the 31-byte
    /// advertising budget).
    public func diagnostic(
        at jsonPath: String, message: String, hint: String? = nil, severity: Diagnostic.Severity = .error
    ) -> Diagnostic {
        let location = location(of: jsonPath) ?? SourceLocation(file: file, line: 1, column: 1)
        return Diagnostic(severity: severity, at: location, path: jsonPath, message: message, hint: hint)
    }

    /// Every characteristic, in table order.
    public var characteristics: [CharacteristicDefinition] { services.flatMap(\.characteristics) }

    public func characteristic(_ id: CharacteristicID) -> CharacteristicDefinition? {
        for service in services {
            if let found = service.characteristics.first(where: { $0.id == id }) { return found }
        }
        return nil
    }

    /// The hint for a characteristic named by a UUID where its id belongs: the ids with that UUID (several when
    /// characteristics share it, as a HID device's Reports do, so a UUID is never taken for one of them); nil when
    /// `name` is no characteristic's UUID.
    public func idHint(forUUID name: String) -> String? {
        guard let uuid = BluetoothUUID(name) else { return nil }
        return Self.idHint(ids: characteristics.filter { $0.uuid == uuid }.map(\.id.rawValue))
    }

    /// Characteristic ids by UUID (several where characteristics share one), for ``idHint(forUUID:in:)``.
    static func characteristicIDsByUUID(_ characteristics: [CharacteristicDefinition]) -> [BluetoothUUID: [String]] {
        Dictionary(grouping: characteristics, by: \.uuid).mapValues { $0.map(\.id.rawValue) }
    }

    /// ``idHint(forUUID:)`` with an index built once, for checks that may ask for each of many rules; `kind` names
    /// what the ids are ids of (`characteristics`, `services`).
    static func idHint(forUUID name: String, in idsByUUID: [BluetoothUUID: [String]], kind: String = "characteristics") -> String? {
        BluetoothUUID(name).flatMap { idsByUUID[$0] }.flatMap { idHint(ids: $0, kind: kind) }
    }

    /// The hint naming `ids` (the first five of a hostile profile's thousands, so each message stays short).
    private static func idHint(ids: [String], kind: String = "characteristics") -> String? {
        let shown = ids.prefix(5).map { "\"\($0)\"" } + (ids.count > 5 ? ["…"] : [])
        switch ids.count {
        case 0: return nil
        case 1: return "\(kind) are named by id: this UUID's is \(shown[0])"
        default: return "\(ids.count) \(kind) have this UUID; name one by its id: \(shown.joined(separator: ", "))"
        }
    }

    /// Names of all advertisement variants.
    public var variantNames: [String] {
        var names: [String] = []
        var seen: Set<String> = []
        for advertisement in advertisements {
            for name in advertisement.variants.keys.sorted() where seen.insert(name).inserted { names.append(name) }
        }
        return names
    }

    /// Initial variable values by name.
    public var initialVariables: [String: ProfileValue] {
        Dictionary(variables.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    /// Initial state values by name.
    public var initialState: [String: ProfileValue] {
        Dictionary(state.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
    }
}

/// A named variable or state value with its initial value.
public struct NamedValue: Sendable, Equatable {
    public var name: String
    public var value: ProfileValue
    public var path: String
    /// Where its name was written, for diagnostics (finding it by path is slow in a huge object).
    var keyLocation: SourceLocation?
}

/// A trigger the control API can fire by name.
public struct NamedTrigger: Sendable, Equatable {
    public var name: String
    public var description: String?
    public var path: String
}
