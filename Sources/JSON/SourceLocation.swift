/// A position in a JSON file: 1-based line and column (columns count Unicode scalars).
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
    /// The file as it was named to the loader (or a pseudo-file such as `--set path`).
    public var file: String
    public var line: Int
    public var column: Int

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    public var description: String { "\(file):\(line):\(column)" }

    /// Where a node a program built is: in no file (line and column 0). Every generated node has this one location,
    /// so two generated documents are equal when their values are; ``JSONNode/located(at:)`` places one in a file.
    public static let generated = SourceLocation(file: "", line: 0, column: 0)
}
