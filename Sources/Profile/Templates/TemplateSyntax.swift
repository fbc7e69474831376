import TextEscaping

/// A parsed template: either bytes (`"51 60 {request[2]} {pad(20)}"`) or text (`"NOKE{hardwareCode}_{address}"`).
///
/// Parse with `Template.parse(_:kind:)`; render with `render(in:)` or `renderText(in:)`. Rendering never traps.
public struct Template: Sendable, Equatable {
    /// Whether text outside `{…}` is hex bytes or literal text.
    public enum Kind: Sendable, Equatable {
        case bytes, text
    }

    // `parts` first: as the first word, its buffer pointer never carries the case bits of an enum that holds a
    // Template (e.g. `Action.Assignment`); there LeakSanitizer could not see it and reported the parts as leaked.
    var parts: [TemplatePart]
    public var source: String
    public var kind: Kind

    /// The bytes it always renders, when it has no expressions.
    public var literalBytes: [UInt8]? {
        var bytes: [UInt8] = []
        for part in parts {
            guard case .literal(let piece) = part else { return nil }
            bytes += piece
        }
        return bytes
    }

    init(source: String, kind: Kind, parts: [TemplatePart]) {
        self.parts = parts
        self.source = source
        self.kind = kind
    }
}

/// One piece of a template: literal bytes or text, or an expression in braces.
enum TemplatePart: Sendable, Equatable {
    case literal([UInt8])
    case expression(TemplateExpression, offset: Int)
}

/// An expression inside `{…}`. `offset` values are character offsets into the template source.
///
/// Only `binary` is `indirect`: when every case is boxed, the enum keeps its case in the boxes' pointer bits,
/// where LeakSanitizer cannot see them, and the templates of a loaded profile were reported as leaked.
enum TemplateExpression: Sendable, Equatable {
    case integer(Int, offset: Int)
    case string(String, offset: Int)
    case name(String, offset: Int)
    /// `name[i]`
    case index(String, Int, offset: Int)
    /// `name[a..b]` (inclusive) or `name[a..]`
    case slice(String, Int, Int?, offset: Int)
    case call(String, [TemplateExpression], offset: Int)
    indirect case binary(BinaryOperator, TemplateExpression, TemplateExpression, offset: Int)

    enum BinaryOperator: String, Sendable, Equatable {
        case add = "+", subtract = "-", multiply = "*"
    }

    var offset: Int {
        switch self {
        case .integer(_, let o), .string(_, let o), .name(_, let o), .index(_, _, let o),
            .slice(_, _, _, let o), .call(_, _, let o), .binary(_, _, _, let o):
            o
        }
    }
}

/// A template syntax error, at a character offset in the template text.
public struct TemplateSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    /// Character offset into the template source (0-based).
    public var offset: Int
    public var hint: String?

    public var description: String { TerminalText.escaped("at offset \(offset): \(message)") }
}
