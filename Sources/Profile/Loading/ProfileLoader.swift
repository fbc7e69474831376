import FoundationEssentials

/// Loads profiles from files: JSON parsing, `extends`, `--set` overrides, validation.
public enum ProfileLoader {
    /// How many `extends` levels are followed before giving up.
    public static let maximumExtendsDepth = 16

    /// Loads and validates a profile; throws `ProfileError` with every problem found.
    public static func load(path: String, overrides: [(path: String, value: String)] = []) throws(ProfileError) -> DeviceProfile {
        let (profile, diagnostics) = analyze(path: path, overrides: overrides)
        guard let profile, !diagnostics.contains(where: { $0.severity == .error }) else {
            throw ProfileError(diagnostics: diagnostics)
        }
        return profile
    }

    /// Loads and validates a profile given as text; `file` names it in diagnostics and anchors `extends`.
    public static func load(
        json: String, file: String, overrides: [(path: String, value: String)] = []
    ) throws(ProfileError) -> DeviceProfile {
        let (profile, diagnostics) = analyze(bytes: Array(json.utf8), file: file, overrides: overrides)
        guard let profile, !diagnostics.contains(where: { $0.severity == .error }) else {
            throw ProfileError(diagnostics: diagnostics)
        }
        return profile
    }

    static func analyze(path: String, overrides: [(path: String, value: String)]) -> (DeviceProfile?, [Diagnostic]) {
        guard let data = FileManager.default.contents(atPath: path) else {
            return (nil, [Diagnostic(file: path, line: 1, column: 1, path: "", message: "cannot read the file")])
        }
        return analyze(bytes: [UInt8](data), file: path, overrides: overrides)
    }

    static func analyze(
        bytes: [UInt8], file: String, overrides: [(path: String, value: String)]
    ) -> (DeviceProfile?, [Diagnostic]) {
        var diagnostics: [Diagnostic] = []
        guard var root = resolve(bytes: bytes, file: file, chain: [], diagnostics: &diagnostics) else {
            return (nil, diagnostics)
        }
        let (overridden, overrideDiagnostics) = ProfileOverrides.apply(overrides, to: root)
        diagnostics += overrideDiagnostics
        root = overridden

        var decoder = ProfileDecoder(file: file)
        guard var profile = decoder.profile(root) else { return (nil, diagnostics + decoder.diagnostics) }
        profile.sourceTree = root
        var checks = SemanticChecks(profile: profile)
        checks.run(templates: decoder.templates)
        diagnostics += sorted(decoder.diagnostics + checks.diagnostics)
        return (profile, diagnostics)
    }

    /// Parses a file and merges it over its `extends` chain.
    private static func resolve(
        bytes: [UInt8], file: String, chain: [String], diagnostics: inout [Diagnostic]
    ) -> JSONNode? {
        let root: JSONNode
        do {
            root = try JSONParser.parse(bytes, file: file)
        } catch {
            diagnostics.append(Diagnostic(at: error.location, path: "", message: error.message))
            return nil
        }
        guard let extends = root["extends"] else { return root }
        guard case .string(let relative) = extends.value else {
            diagnostics.append(Diagnostic(
                at: extends.location, path: "extends", message: "expected a string, found \(extends.value.kindName)"))
            return nil
        }
        let basePath = path(relative, relativeTo: file)
        if chain.contains(basePath) || basePath == file {
            diagnostics.append(Diagnostic(
                at: extends.location, path: "extends", message: "\"\(relative)\" extends itself through \((chain + [file]).joined(separator: " → "))"))
            return nil
        }
        guard chain.count < maximumExtendsDepth else {
            diagnostics.append(Diagnostic(at: extends.location, path: "extends", message: "extends chain is too deep"))
            return nil
        }
        guard let data = FileManager.default.contents(atPath: basePath) else {
            diagnostics.append(Diagnostic(
                at: extends.location, path: "extends", message: "cannot read \"\(basePath)\"",
                hint: "extends paths are relative to the extending file"))
            return nil
        }
        guard let base = resolve(bytes: [UInt8](data), file: basePath, chain: chain + [file], diagnostics: &diagnostics)
        else { return nil }
        var overriding = root
        if case .object(let members) = root.value {
            overriding.value = .object(members.filter { $0.key != "extends" })
        }
        var merged = ProfileMerge.merge(base, overriding)
        if case .object(let members) = merged.value {
            merged.value = .object(members.filter { $0.key != "extends" })
        }
        return merged
    }

    static func path(_ relative: String, relativeTo file: String) -> String {
        if relative.hasPrefix("/") { return relative }
        guard let slash = file.lastIndex(of: "/") else { return relative }
        return String(file[...slash]) + relative
    }

    static func sorted(_ diagnostics: [Diagnostic]) -> [Diagnostic] {
        diagnostics.enumerated().sorted { a, b in
            (a.element.file, a.element.line, a.element.column, a.offset)
                < (b.element.file, b.element.line, b.element.column, b.offset)
        }.map(\.element)
    }
}

/// Validation entry points for `gattemu validate`.
public enum ProfileValidator {
    /// Every problem in the profile at `path` (after `extends` and overrides); empty when it is valid.
    public static func validate(path: String, overrides: [(path: String, value: String)] = []) -> [Diagnostic] {
        ProfileLoader.analyze(path: path, overrides: overrides).1
    }

    /// Every problem in a profile given as text.
    public static func validate(
        json: String, file: String, overrides: [(path: String, value: String)] = []
    ) -> [Diagnostic] {
        ProfileLoader.analyze(bytes: Array(json.utf8), file: file, overrides: overrides).1
    }
}

