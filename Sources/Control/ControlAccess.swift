import NIOCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Which `Host` names and browser origins the control API accepts besides those its address implies
/// (`--control-allow-host`, `--control-allow-origin`; docs/control.md, "Security").
public struct ControlAccess: Sendable, Equatable {
    /// Extra `Host` names: `NAME` (at the bound port) or `NAME:PORT` (a tunnel or proxy on another port).
    public var allowedHosts: [String]
    /// Origins whose pages may call the API (CORS): exact `scheme://host[:port]` strings, or `null`.
    public var allowedOrigins: [String]
    /// The local users (uids) whose connections reach the token check: gattemu's own user and root (who can read
    /// the token file anyway). A connection from this machine owned by anyone else is refused with 403
    /// (``LoopbackPeer``); tests narrow the set.
    public var localUsers: Set<UInt32> = [geteuid(), 0]
    /// Groups whose members may use the API from this machine without the token (`--control-allow-group`): the kernel
    /// says which user opened a connection, and a member of one of these groups is let in as gattemu's own user is,
    /// the server giving the token for it (a tester's account and the packaged service; docs/rig.md).
    public var allowedGroups: Set<UInt32> = []

    /// Nothing beyond what the bound address implies.
    public init() {
        allowedHosts = []
        allowedOrigins = []
    }

    /// Checks each entry; a malformed one (or a `*`) is a setup error.
    public init(allowedHosts: [String], allowedOrigins: [String]) throws(ControlSetupError) {
        for host in allowedHosts where HostName(host[...]) == nil {
            throw ControlSetupError(
                message:
                    "--control-allow-host \(host): expected a host name or IP address, optionally with :PORT (e.g. rig.local, 10.0.0.2 or localhost:9000)"
            )
        }
        for origin in allowedOrigins where origin != "null" && Self.originAuthority(origin) == nil {
            throw ControlSetupError(
                message:
                    "--control-allow-origin \(origin): expected an origin such as http://localhost:3000 (scheme, host, optional port; no path, no wildcard), or null"
            )
        }
        self.allowedHosts = allowedHosts
        self.allowedOrigins = allowedOrigins
    }

    /// Whether `uid`'s account is in one of ``allowedGroups`` (its primary group or a supplementary one), as the
    /// system's group database says now.
    func isMember(_ uid: UInt32) -> Bool {
        guard !allowedGroups.isEmpty else { return false }
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &found) == 0, found != nil, let name = entry.pw_name else { return false }
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(name, entry.pw_gid, &groups, &count) < 0 {
            groups = [gid_t](repeating: 0, count: Int(max(count, 0)))
            guard getgrouplist(name, entry.pw_gid, &groups, &count) >= 0 else { return false }
        }
        return groups.prefix(Int(count)).contains { allowedGroups.contains($0) }
    }

    /// The gid of group `name` (a name, or a number); nil for a group the system does not know.
    public static func groupID(_ name: String) -> UInt32? {
        if let number = UInt32(name) { return number }
        var entry = group()
        var found: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getgrnam_r(name, &entry, &buffer, buffer.count, &found) == 0, found != nil else { return nil }
        return entry.gr_gid
    }

    /// The host part of `http://HOST[:PORT]` or `https://…` (with its scheme), nil when `text` is not an origin.
    static func originAuthority(_ text: String) -> (scheme: String, host: HostName)? {
        guard let separator = text.firstRange(of: "://") else { return nil }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        let authority = text[separator.upperBound...]
        guard !authority.contains(where: { "/?#@".contains($0) }), let host = HostName(authority) else { return nil }
        return (scheme, host)
    }
}

/// A `Host` header value (or an origin's host part): lowercased name, IPv6 without brackets, and port.
struct HostName: Equatable, Sendable {
    var name: String
    /// Nil when absent (port 80 for HTTP).
    var port: Int?

    init(name: String, port: Int?) {
        self.name = name
        self.port = port
    }

    /// Parses `name`, `name:port`, `[v6]` or `[v6]:port`; nil for anything else.
    init?(_ text: Substring) {
        let rest: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            name = text[text.index(after: text.startIndex)..<close].lowercased()
            guard Self.canonicalAddress(name)?.contains(":") == true else { return nil }
            rest = text[text.index(after: close)...]
        } else {
            let colon = text.firstIndex(of: ":") ?? text.endIndex
            name = text[..<colon].lowercased()
            rest = text[colon...]
            guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || ".-_".contains($0)) }) else { return nil }
        }
        if rest.isEmpty {
            port = nil
        } else {
            guard rest.first == ":" else { return nil }
            let digits = rest.dropFirst()
            guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                let number = Int(digits), number <= 65535
            else { return nil }
            port = number
        }
    }

    /// The IP address `name` spells, in canonical form; nil when it is not an IP literal.
    var address: String? { Self.canonicalAddress(name) }

    /// Same host: equal addresses when both are IP literals, equal names otherwise.
    func sameHost(as other: HostName) -> Bool {
        if let address, let otherAddress = other.address { return address == otherAddress }
        return name == other.name
    }

    static func canonicalAddress(_ text: String) -> String? {
        guard text.contains(where: { $0 == "." || $0 == ":" }) else { return nil }
        return (try? SocketAddress(ipAddress: text, port: 0))?.ipAddress
    }
}

/// The port the server actually listens on (known once bound; 0 asked for means "any").
final class ListeningPort: Sendable {
    private let value = Atomic<Int>(0)

    var port: Int? {
        let port = value.load(ordering: .relaxed)
        return port == 0 ? nil : port
    }

    func set(_ port: Int) { value.store(port, ordering: .relaxed) }
}

/// Decides, for one bound address, which `Host` values and origins are the API's own and which
/// cross-origin pages are allowed in.
struct AccessPolicy: Sendable {
    let endpoint: ControlEndpoint
    let extraHosts: [HostName]
    let allowedOrigins: Set<String>
    let listening: ListeningPort

    init(endpoint: ControlEndpoint, access: ControlAccess, listening: ListeningPort) {
        self.endpoint = endpoint
        self.extraHosts = access.allowedHosts.compactMap { HostName($0[...]) }
        self.allowedOrigins = Set(access.allowedOrigins)
        self.listening = listening
    }

    /// The port requests must name: the bound one (the configured one until the server is bound).
    var port: Int { listening.port ?? endpoint.port }

    /// Whether `host` names this server: see ``acceptedHosts``. A missing port means 80.
    func accepts(_ host: HostName) -> Bool {
        let port = host.port ?? 80
        if extraHosts.contains(where: { $0.sameHost(as: host) && ($0.port ?? self.port) == port }) { return true }
        guard port == self.port else { return false }
        let bound = HostName(name: endpoint.host.lowercased(), port: nil)
        if endpoint.isWildcard { return host.address != nil || host.name == "localhost" }
        if endpoint.isLoopback, host.name == "localhost" || host.address == "127.0.0.1" || host.address == "::1" { return true }
        return host.sameHost(as: bound)
    }

    /// What ``accepts(_:)`` accepts, for error messages.
    func acceptedHosts() -> [String] {
        var hosts: [String]
        if endpoint.isWildcard {
            hosts = ["localhost:\(port)", "any IP address of this machine with :\(port)"]
        } else if endpoint.isLoopback {
            hosts = ["127.0.0.1", "localhost", "::1", endpoint.host].map { ControlEndpoint.authority($0, port: port) }
        } else {
            hosts = [ControlEndpoint.authority(endpoint.host, port: port)]
        }
        hosts += extraHosts.map { ControlEndpoint.authority($0.name, port: $0.port ?? port) }
        var seen = Set<String>()
        return hosts.filter { seen.insert($0).inserted }
    }

    /// `http://` and a host this server accepts: a page of the API itself.
    func isOwn(origin: String) -> Bool {
        guard let (scheme, host) = ControlAccess.originAuthority(origin), scheme == "http" else { return false }
        return accepts(host)
    }

    /// Listed with `--control-allow-origin` (exact match; `null` only when listed).
    func isAllowed(origin: String) -> Bool { allowedOrigins.contains(origin) }
}
