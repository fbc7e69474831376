import FoundationEssentials
import JSON

/// Loads profiles from files: JSON parsing, `extends`, `--set` overrides, validation.
///
/// `extends` paths are relative to the extending file and must name `.json` files inside the folder of the
/// profile being loaded (after resolving symlinks); `allowExtendsOutside` lifts the folder rule.
public enum ProfileLoader {
    /// How many `extends` levels are followed before giving up.
    public static let maximumExtendsDepth = 16

    /// Loads and validates a profile; throws `ProfileError` with every problem found.
    public static func load(
        path: String, overrides: [(path: String, value: String)] = [], allowExtendsOutside: Bool = false
    ) throws(ProfileError) -> DeviceProfile {
        try validated(analyze(path: path, overrides: overrides, allowExtendsOutside: allowExtendsOutside))
    }

    /// Loads and validates a profile given as text; `file` names it in diagnostics and anchors `extends`.
    public static func load(
        json: String, file: String, overrides: [(path: String, value: String)] = [], allowExtendsOutside: Bool = false
    ) throws(ProfileError) -> DeviceProfile {
        try validated(analyze(bytes: Array(json.utf8), file: file, overrides: overrides, allowExtendsOutside: allowExtendsOutside))
    }

    /// Loads and validates a profile that is already a document in memory (the relay's mirror, made from the device
    /// at run time): no text is written or parsed, and nothing is extended or overridden. `file` names it in
    /// diagnostics, which locate by JSON path.
    public static func load(document root: JSONNode, file: String) throws(ProfileError) -> DeviceProfile {
        try validated(analyze(root: root, file: file))
    }

    /// The profile of an analysis, or every problem found when it has an error.
    private static func validated(_ analysis: (DeviceProfile?, [Diagnostic])) throws(ProfileError) -> DeviceProfile {
        let (profile, diagnostics) = analysis
        guard let profile, !diagnostics.contains(where: { $0.severity == .error }) else {
            throw ProfileError(diagnostics: diagnostics)
        }
        return profile
    }

    static func analyze(
        path: String, overrides: [(path: String, value: String)], allowExtendsOutside: Bool = false
    ) -> (DeviceProfile?, [Diagnostic]) {
        let bytes: [UInt8]
        switch ProfileFiles.read(path, requireRegularFile: false) {
        case .success(let read): bytes = read
        case .failure(let problem):
            let message = problem == .unreadable ? "cannot read the file" : "the file \(problem.message)"
            return (nil, [Diagnostic(file: path, line: 1, column: 1, path: "", message: message)])
        }
        return analyze(bytes: bytes, file: path, overrides: overrides, allowExtendsOutside: allowExtendsOutside)
    }

    static func analyze(
        bytes: [UInt8], file: String, overrides: [(path: String, value: String)], allowExtendsOutside: Bool = false
    ) -> (DeviceProfile?, [Diagnostic]) {
        var resolver = ExtendsResolver(profile: file, allowOutside: allowExtendsOutside)
        guard var root = resolver.resolve(bytes: bytes, file: file, place: resolver.top, chain: []) else {
            return (nil, resolver.diagnostics)
        }
        var diagnostics = resolver.diagnostics
        let (overridden, overrideDiagnostics) = ProfileOverrides.apply(overrides, to: root)
        diagnostics += overrideDiagnostics
        root = overridden
        return analyze(root: root, file: file, diagnostics: diagnostics)
    }

    /// Decodes and checks a document (parsed, extended and overridden already); `diagnostics` are those so far.
    static func analyze(root: JSONNode, file: String, diagnostics: [Diagnostic] = []) -> (DeviceProfile?, [Diagnostic]) {
        var diagnostics = diagnostics
        var decoder = ProfileDecoder(file: file)
        guard var profile = decoder.profile(root) else { return (nil, diagnostics + decoder.diagnostics) }
        profile.sourceTree = root
        var checks = SemanticChecks(profile: profile, suggestions: decoder.suggestions)
        checks.run(templates: decoder.templates)
        diagnostics += sorted(decoder.diagnostics + checks.diagnostics)
        return (profile, diagnostics)
    }

    static func sorted(_ diagnostics: [Diagnostic]) -> [Diagnostic] {
        diagnostics.enumerated().sorted { a, b in
            (a.element.file, a.element.line, a.element.column, a.offset)
                < (b.element.file, b.element.line, b.element.column, b.offset)
        }.map(\.element)
    }
}

/// Follows `extends` chains: resolves each base against the extending file, refuses what it must not read,
/// detects cycles, parses and merges.
struct ExtendsResolver {
    /// A file of the chain: its path as written relative to the files before it (made absolute), and the same
    /// with symlinks resolved.
    struct Place {
        var lexical: String
        var real: String
    }

    /// The profile's own file.
    let top: Place
    /// The folder bases must stay in (the profile's folder), as given and resolved.
    let folder: Place
    let allowOutside: Bool
    var diagnostics: [Diagnostic] = []

    init(profile file: String, allowOutside: Bool) {
        let lexical = ProfileFiles.normalized(ProfileFiles.absolute(file))
        let lexicalFolder = ProfileFiles.folder(of: lexical)
        // The file itself may not exist (a profile given as text); its folder then anchors everything.
        top = Place(lexical: lexical, real: ProfileFiles.resolved(lexical))
        folder = Place(lexical: lexicalFolder, real: ProfileFiles.resolved(lexicalFolder))
        self.allowOutside = allowOutside
    }

    /// A file as cycle messages name it: relative to the profile's folder when inside it.
    func display(_ real: String) -> String {
        ProfileFiles.isInside(real, folder: folder.real) ? String(real.dropFirst(folder.real.count + 1)) : real
    }

    /// Parses `bytes` (the file named `file` in diagnostics, at `place`) and merges it over its `extends` chain;
    /// `chain` holds the resolved files that extend it, outermost first.
    mutating func resolve(bytes: [UInt8], file: String, place: Place, chain: [String]) -> JSONNode? {
        let root: JSONNode
        do {
            root = try JSONParser.parse(bytes, file: file)
        } catch {
            diagnostics.append(Diagnostic(at: error.location, path: "", message: error.message))
            return nil
        }
        guard case .object(let members) = root.value, let member = members.last(where: { $0.key == "extends" }) else {
            return root
        }
        let extends = member.value
        func refuse(_ message: String, hint: String? = nil) -> JSONNode? {
            diagnostics.append(Diagnostic(at: member.keyLocation, path: "extends", message: message, hint: hint))
            return nil
        }
        guard case .string(let relative) = extends.value else {
            diagnostics.append(
                Diagnostic(
                    at: extends.location, path: "extends", message: "expected a string, found \(extends.value.kindName)"))
            return nil
        }
        let outsideHint = "a base must be in the profile's folder unless allowed (--allow-extends-outside)"
        guard relative.hasSuffix(".json") else {
            return refuse("\"\(relative)\" is not a .json file; extends only reads .json profiles")
        }
        if relative.hasPrefix("/"), !allowOutside {
            return refuse("\"\(relative)\" is an absolute path; extends takes a path relative to this file", hint: outsideHint)
        }
        // Lexically first: a base outside the folder is refused without looking at the file system.
        let lexical = ProfileFiles.normalized(
            relative.hasPrefix("/") ? relative : ProfileFiles.folder(of: place.lexical) + "/" + relative)
        if !allowOutside, !ProfileFiles.isInside(lexical, folder: folder.lexical) {
            return refuse("\"\(relative)\" is outside the profile's folder", hint: outsideHint)
        }
        let shown = ProfileFiles.join(relative, relativeTo: file)
        let real = ProfileFiles.resolved(lexical)
        if !allowOutside, !ProfileFiles.isInside(real, folder: folder.real) {
            return refuse("\"\(relative)\" leads outside the profile's folder, to \(real)", hint: outsideHint)
        }
        guard real.hasSuffix(".json") else {
            return refuse("\"\(relative)\" leads to \(real), not a .json file; extends only reads .json profiles")
        }
        let files = chain + [place.real]
        if files.contains(real) {
            let cycle = (files.drop(while: { $0 != real }) + [real]).map(display).joined(separator: " → ")
            return refuse("extends cycle: \(cycle)")
        }
        guard chain.count < ProfileLoader.maximumExtendsDepth else {
            return refuse("extends chain is too deep (over \(ProfileLoader.maximumExtendsDepth) files)")
        }
        let data: [UInt8]
        switch ProfileFiles.read(real, requireRegularFile: true) {
        case .success(let read): data = read
        case .failure(.unreadable):
            return refuse("cannot read \"\(shown)\"", hint: "extends paths are relative to the extending file")
        case .failure(let problem): return refuse("\"\(shown)\" \(problem.message)")
        }
        guard let base = resolve(bytes: data, file: shown, place: Place(lexical: lexical, real: real), chain: files)
        else { return nil }
        var overriding = root
        overriding.value = .object(members.filter { $0.key != "extends" })
        var merged = ProfileMerge.merge(base, overriding)
        if case .object(let mergedMembers) = merged.value {
            merged.value = .object(mergedMembers.filter { $0.key != "extends" })
        }
        return merged
    }
}

/// Validation entry points for `gattemu validate`.
public enum ProfileValidator {
    /// Every problem in the profile at `path` (after `extends` and overrides); empty when it is valid.
    public static func validate(
        path: String, overrides: [(path: String, value: String)] = [], allowExtendsOutside: Bool = false
    ) -> [Diagnostic] {
        ProfileLoader.analyze(path: path, overrides: overrides, allowExtendsOutside: allowExtendsOutside).1
    }

    /// Every problem in a profile given as text.
    public static func validate(
        json: String, file: String, overrides: [(path: String, value: String)] = [], allowExtendsOutside: Bool = false
    ) -> [Diagnostic] {
        ProfileLoader.analyze(bytes: Array(json.utf8), file: file, overrides: overrides, allowExtendsOutside: allowExtendsOutside).1
    }
}
