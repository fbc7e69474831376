/// Where the control API listens: `HOST:PORT`, `[IPv6]:PORT`, or `off`.
public struct ControlEndpoint: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public static let `default` = ControlEndpoint(host: "127.0.0.1", port: 8765)

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `127.0.0.1:8765`, `[::1]:8765`, `localhost:8765` or `:8765` (loopback); nil when malformed.
    public init?(parsing text: String) {
        var host: Substring
        var portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        if host.isEmpty { host = "127.0.0.1" }
        guard let port = Int(portText), (0...65535).contains(port),
            host.allSatisfy({ $0.isLetter || $0.isNumber || ".-:".contains($0) })
        else { return nil }
        self.init(host: String(host), port: port)
    }

    /// True for `localhost`, 127.0.0.0/8 and `::1`: only this machine can connect.
    public var isLoopback: Bool {
        if host == "localhost" || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// True for `0.0.0.0` and `::`: every address of this machine.
    public var isWildcard: Bool { host == "0.0.0.0" || host == "::" || host == "0:0:0:0:0:0:0:0" }

    /// The address as it appears in a `Host` header: IPv6 in brackets, then the port.
    public static func authority(_ host: String, port: Int) -> String {
        (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
    }

    public var description: String { Self.authority(host, port: port) }
}
