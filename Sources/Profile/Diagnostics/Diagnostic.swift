import JSON
import TextEscaping

/// One problem found in a profile, located in its file and by JSON path.
///
/// `description` renders as `noke.json:14:9 services[0].flags[0]: unknown flag "notifiy" (did you mean "notify"?)`,
/// with control characters from the profile escaped (``TerminalText/escaped(_:)``).
public struct Diagnostic: Sendable, Hashable, CustomStringConvertible {
    /// Whether the problem stops the profile from loading.
    public enum Severity: String, Sendable, Hashable {
        case error, warning
    }

    public var severity: Severity
    public var file: String
    public var line: Int
    public var column: Int
    /// The JSON path of the offending value, e.g. `services[0].characteristics[1].flags[0]`; may be empty.
    public var path: String
    public var message: String
    /// A suggestion such as `did you mean "notify"?`, or nil.
    public var hint: String?

    public init(
        severity: Severity = .error, file: String, line: Int, column: Int,
        path: String, message: String, hint: String? = nil
    ) {
        self.severity = severity
        self.file = file
        self.line = line
        self.column = column
        self.path = path
        self.message = message
        self.hint = hint
    }

    public init(
        severity: Severity = .error, at location: SourceLocation, path: String, message: String, hint: String? = nil
    ) {
        self.init(
            severity: severity, file: location.file, line: location.line, column: location.column,
            path: path, message: message, hint: hint)
    }

    public var location: SourceLocation { SourceLocation(file: file, line: line, column: column) }

    public var description: String {
        var text = "\(file):\(line):\(column)"
        text += path.isEmpty ? ":" : " \(path):"
        if severity == .warning { text += " warning:" }
        text += " \(message)"
        if let hint { text += " (\(hint))" }
        return TerminalText.escaped(text)
    }
}

/// Thrown when a profile cannot be loaded; carries every problem found, in file order.
public struct ProfileError: Error, Sendable, CustomStringConvertible {
    public var diagnostics: [Diagnostic]

    public init(diagnostics: [Diagnostic]) {
        self.diagnostics = diagnostics
    }

    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}
