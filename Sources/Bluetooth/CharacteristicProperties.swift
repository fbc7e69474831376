/// The properties byte of a characteristic declaration (Core spec Vol 3 Part G 3.3.1.1).
///
/// BlueZ names them as `Flags` strings: ``init(bluezFlags:)`` and ``bluezFlags`` convert; BlueZ's security
/// flags (`encrypt-read`, …) are not properties and are kept apart as ``CharacteristicSecurity``.
public struct CharacteristicProperties: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let broadcast = CharacteristicProperties(rawValue: 0x01)
    public static let read = CharacteristicProperties(rawValue: 0x02)
    public static let writeWithoutResponse = CharacteristicProperties(rawValue: 0x04)
    public static let write = CharacteristicProperties(rawValue: 0x08)
    public static let notify = CharacteristicProperties(rawValue: 0x10)
    public static let indicate = CharacteristicProperties(rawValue: 0x20)
    public static let authenticatedSignedWrites = CharacteristicProperties(rawValue: 0x40)
    public static let extendedProperties = CharacteristicProperties(rawValue: 0x80)

    /// BlueZ's flag name for each property bit, in bit order.
    public static let bluezNames: [(CharacteristicProperties, String)] = [
        (.broadcast, "broadcast"), (.read, "read"), (.writeWithoutResponse, "write-without-response"), (.write, "write"),
        (.notify, "notify"), (.indicate, "indicate"), (.authenticatedSignedWrites, "authenticated-signed-writes"),
        (.extendedProperties, "extended-properties"),
    ]

    /// The properties among BlueZ `Flags` (other flags are ignored).
    public init<Flags: Sequence>(bluezFlags: Flags) where Flags.Element == String {
        var properties: CharacteristicProperties = []
        for flag in bluezFlags {
            if let match = Self.bluezNames.first(where: { $0.1 == flag }) { properties.insert(match.0) }
        }
        self = properties
    }

    /// BlueZ `Flags` names of these properties, in bit order.
    public var bluezFlags: [String] { Self.bluezNames.filter { contains($0.0) }.map(\.1) }

    public var description: String { bluezFlags.joined(separator: ",") }
}

/// What a characteristic asks of the link before it may be used: BlueZ's `encrypt-*`,
/// `encrypt-authenticated-*` and `secure-*` flags, per operation.
public struct CharacteristicSecurity: Sendable, Hashable {
    public enum Level: Int, Sendable, Hashable, Comparable {
        case none = 0
        /// `encrypt-…`: an encrypted link (pairing of any kind).
        case encrypted
        /// `encrypt-authenticated-…`: an encrypted link from MITM-protected pairing.
        case authenticated
        /// `secure-…`: LE Secure Connections.
        case secure

        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

        var prefix: String? {
            switch self {
            case .none: nil
            case .encrypted: "encrypt"
            case .authenticated: "encrypt-authenticated"
            case .secure: "secure"
            }
        }
    }

    public var read: Level = .none
    public var write: Level = .none
    public var notify: Level = .none
    public var indicate: Level = .none

    public init() {}

    /// The security levels among BlueZ `Flags`.
    public init<Flags: Sequence>(bluezFlags: Flags) where Flags.Element == String {
        for flag in bluezFlags {
            for level in [Level.secure, .authenticated, .encrypted] {
                guard let prefix = level.prefix, flag.hasPrefix(prefix + "-") else { continue }
                switch flag.dropFirst(prefix.count + 1) {
                case "read": read = max(read, level)
                case "write": write = max(write, level)
                case "notify": notify = max(notify, level)
                case "indicate": indicate = max(indicate, level)
                default: continue
                }
                break
            }
        }
    }

    /// Whether any operation asks for more than a plain link: a central must pair first.
    public var needsPairing: Bool { [read, write, notify, indicate].contains { $0 != .none } }

    /// BlueZ `Flags` names for these levels.
    public var bluezFlags: [String] {
        [("read", read), ("write", write), ("notify", notify), ("indicate", indicate)].compactMap { operation, level in
            level.prefix.map { "\($0)-\(operation)" }
        }
    }
}

/// Everything BlueZ's `Flags` of a characteristic (or descriptor) say: the properties, the security each
/// operation asks for, and the flags that are neither (`reliable-write`, `writable-auxiliaries`, `authorize`).
///
/// BlueZ's strings are made only by ``bluezFlags`` (when the `Flags` property is written to D-Bus) and read
/// only by ``init(bluezFlags:)`` (when a remote device's `Flags` are read); unknown strings are ignored. A
/// descriptor uses only `read`, `write`, their security and `authorize`.
public struct CharacteristicFlags: Sendable, Hashable, CustomStringConvertible {
    public var properties: CharacteristicProperties
    public var security: CharacteristicSecurity
    /// `reliable-write`: queued writes, executed together (an extended property).
    public var reliableWrite: Bool
    /// `writable-auxiliaries`: the user description descriptor may be written (an extended property).
    public var writableAuxiliaries: Bool
    /// `authorize`: bluetoothd asks the application before each read or write (`prepare-authorize`).
    public var authorize: Bool

    public init(
        properties: CharacteristicProperties = [], security: CharacteristicSecurity = CharacteristicSecurity(), reliableWrite: Bool = false,
        writableAuxiliaries: Bool = false, authorize: Bool = false
    ) {
        self.properties = properties
        self.security = security
        self.reliableWrite = reliableWrite
        self.writableAuxiliaries = writableAuxiliaries
        self.authorize = authorize
    }

    /// Parses BlueZ `Flags`.
    public init<Flags: Sequence>(bluezFlags: Flags) where Flags.Element == String {
        let flags = Array(bluezFlags)
        self.init(
            properties: CharacteristicProperties(bluezFlags: flags), security: CharacteristicSecurity(bluezFlags: flags),
            reliableWrite: flags.contains("reliable-write"), writableAuxiliaries: flags.contains("writable-auxiliaries"),
            authorize: flags.contains("authorize"))
    }

    /// BlueZ `Flags`: properties in bit order, then the extended ones, the security ones and `authorize`.
    public var bluezFlags: [String] {
        var flags = properties.bluezFlags
        if reliableWrite { flags.append("reliable-write") }
        if writableAuxiliaries { flags.append("writable-auxiliaries") }
        flags += security.bluezFlags
        if authorize { flags.append("authorize") }
        return flags
    }

    /// Centrals may subscribe: notify or indicate, plain or secured.
    public var canNotify: Bool {
        !properties.isDisjoint(with: [.notify, .indicate]) || security.notify != .none || security.indicate != .none
    }

    /// Centrals may write with response, plain or secured.
    public var canWriteWithResponse: Bool { properties.contains(.write) || security.write != .none }

    public var description: String { bluezFlags.joined(separator: ",") }
}
