/// A validated device profile: GATT table, advertisements, variables, state, timers and rules.
///
/// Load one with `ProfileLoader.load(path:overrides:)`. It keeps a source map, so code outside this
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
    var sourceMap: [String: SourceLocation]
    /// Faults injected from the start (`"faults"`; see `docs/control.md`).
    public var faults: [FaultSpec] = []

    /// Where the value at a JSON path (e.g. `advertisements[0].localName`) was written, if known.
    public func location(of jsonPath: String) -> SourceLocation? {
        if let exact = sourceMap[jsonPath] { return exact }
        // Fall back to the nearest enclosing value that has a location.
        guard var components = JSONPath.components(of: jsonPath) else { return nil }
        while !components.isEmpty {
            components.removeLast()
            if let location = sourceMap[Self.render(components)] { return location }
        }
        return nil
    }

    /// A diagnostic located at a JSON path, for checks done outside this module (e.g. the 31-byte
    /// advertising budget).
    public func diagnostic(
        at jsonPath: String, message: String, hint: String? = nil, severity: Diagnostic.Severity = .error
    ) -> Diagnostic {
        let location = location(of: jsonPath) ?? SourceLocation(file: file, line: 1, column: 1)
        return Diagnostic(severity: severity, at: location, path: jsonPath, message: message, hint: hint)
    }

    static func render(_ components: [JSONPath.Component]) -> String {
        var path = ""
        for component in components {
            switch component {
            case .key(let key): path = JSONPath.appending(key, to: path)
            case .index(let index): path = JSONPath.appending(index, to: path)
            }
        }
        return path
    }

    /// Every characteristic, in table order.
    public var characteristics: [CharacteristicDefinition] { services.flatMap(\.characteristics) }

    public func characteristic(_ id: String) -> CharacteristicDefinition? {
        for service in services {
            if let found = service.characteristics.first(where: { $0.id == id }) { return found }
        }
        return nil
    }

    /// Names of all advertisement variants.
    public var variantNames: [String] {
        var names: [String] = []
        for advertisement in advertisements {
            for name in advertisement.variants.keys.sorted() where !names.contains(name) { names.append(name) }
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
}

/// A trigger the control API can fire by name.
public struct NamedTrigger: Sendable, Equatable {
    public var name: String
    public var description: String?
    public var path: String
}
