import Lexical

/// A duration in a request: milliseconds as a number, or text (`"250ms"`, `"5s"`).
public enum DurationValue: Codable, Sendable, Equatable {
    case milliseconds(Int)
    case text(String)

    public static var schema: Schema {
        .oneOf([
            .described("milliseconds", .integer(minimum: 0, maximum: UInt64(ValueLimits.maximumMilliseconds))),
            .string(pattern: Patterns.duration),
        ])
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int.self) {
            self = .milliseconds(number)
        } else {
            self = .text(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .milliseconds(let value): try container.encode(value)
        case .text(let text): try container.encode(text)
        }
    }
}
