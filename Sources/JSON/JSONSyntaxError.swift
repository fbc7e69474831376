import TextEscaping

/// A JSON syntax error and where it is.
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var location: SourceLocation

    public var description: String { TerminalText.escaped("\(location): \(message)") }
}
