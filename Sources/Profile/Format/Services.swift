import Bluetooth

/// A GATT service: id for rules, normalised UUID, characteristics.
public struct ServiceDefinition: Sendable, Equatable {
    public var id: String
    public var uuid: BluetoothUUID
    public var primary: Bool
    /// Ids of included services.
    public var includes: [String]
    public var characteristics: [CharacteristicDefinition]
    /// The ATT handle asked of BlueZ for the service declaration; nil lets BlueZ choose.
    public var handle: AttributeHandle?
    /// JSON path of this service in the profile, for diagnostics.
    public var path: String
    /// In the GATT table from the start; `false`: only once the control API adds it (`PUT /v1/services/{id}`),
    /// which makes bluetoothd send Service Changed.
    public var present = true
}

/// A GATT characteristic. Its `id` is the name rules and engine events use.
public struct CharacteristicDefinition: Sendable, Equatable {
    public var id: CharacteristicID
    public var uuid: BluetoothUUID
    public var flags: [CharacteristicFlag]
    /// The initial value; `regenerate` says when the engine renders it again.
    public var value: ValueSource
    /// Longest value accepted from writes (and allowed for the initial value); nil = 512.
    public var maxLength: Int?
    /// Whether writes store the written value. nil = store only if no rule has a write trigger on it.
    public var storeWrites: Bool?
    public var descriptors: [DescriptorDefinition]
    public var description: String?
    /// The ATT handle asked of BlueZ for the value (its declaration takes the one before); nil lets BlueZ choose.
    public var handle: AttributeHandle?
    public var path: String
    /// Notifications and indications longer than the central's ATT MTU − 3 go out as consecutive pieces of
    /// MTU − 3 bytes (as devices that chunk by MTU do); otherwise BlueZ sends only the first MTU − 3 bytes.
    public var fragment = false
    /// Writes carry length-prefixed frames that the engine joins and splits (``FrameFormat``); nil: each write
    /// is one value.
    public var frames: FrameFormat?

    public func has(_ flag: CharacteristicFlag) -> Bool { flags.contains(flag) }

    /// The flags as Bluetooth's model of a characteristic has them (what the GATT table declares).
    public var declaredFlags: CharacteristicFlags {
        flags.reduce(into: CharacteristicFlags()) { $1.declare(in: &$0) }
    }
}

/// A GATT descriptor (e.g. 0x2901 user description, 0x2904 presentation format).
public struct DescriptorDefinition: Sendable, Equatable {
    public var id: String
    public var uuid: BluetoothUUID
    public var flags: [DescriptorFlag]
    public var value: ValueSource
    /// The ATT handle asked of BlueZ; nil lets BlueZ choose.
    public var handle: AttributeHandle?
    public var path: String

    /// The flags as Bluetooth's model has them (a descriptor's: read, write, their security, authorize).
    public var declaredFlags: CharacteristicFlags {
        flags.reduce(into: CharacteristicFlags()) { $1.declare(in: &$0) }
    }
}

/// A characteristic flag; the raw value is the BlueZ `Flags` string.
public enum CharacteristicFlag: String, Sendable, CaseIterable, Equatable {
    case broadcast, read, write, notify, indicate, authorize
    case writeWithoutResponse = "write-without-response"
    case authenticatedSignedWrites = "authenticated-signed-writes"
    case extendedProperties = "extended-properties"
    case reliableWrite = "reliable-write"
    case writableAuxiliaries = "writable-auxiliaries"
    case encryptRead = "encrypt-read"
    case encryptWrite = "encrypt-write"
    case encryptNotify = "encrypt-notify"
    case encryptIndicate = "encrypt-indicate"
    case encryptAuthenticatedRead = "encrypt-authenticated-read"
    case encryptAuthenticatedWrite = "encrypt-authenticated-write"
    case encryptAuthenticatedNotify = "encrypt-authenticated-notify"
    case encryptAuthenticatedIndicate = "encrypt-authenticated-indicate"
    case secureRead = "secure-read"
    case secureWrite = "secure-write"
    case secureNotify = "secure-notify"
    case secureIndicate = "secure-indicate"
}

/// Where ``CharacteristicSecurity`` keeps one operation's level.
typealias SecuredOperation = WritableKeyPath<CharacteristicSecurity, CharacteristicSecurity.Level> & Sendable

extension CharacteristicFlag {
    /// The security flags: the operation each secures and the level it asks for.
    static let securityLevels: [CharacteristicFlag: (SecuredOperation, CharacteristicSecurity.Level)] = [
        .encryptRead: (\.read, .encrypted), .encryptWrite: (\.write, .encrypted), .encryptNotify: (\.notify, .encrypted),
        .encryptIndicate: (\.indicate, .encrypted), .encryptAuthenticatedRead: (\.read, .authenticated),
        .encryptAuthenticatedWrite: (\.write, .authenticated), .encryptAuthenticatedNotify: (\.notify, .authenticated),
        .encryptAuthenticatedIndicate: (\.indicate, .authenticated), .secureRead: (\.read, .secure), .secureWrite: (\.write, .secure),
        .secureNotify: (\.notify, .secure), .secureIndicate: (\.indicate, .secure),
    ]

    /// Adds what this flag declares to `flags`.
    func declare(in flags: inout CharacteristicFlags) {
        switch self {
        case .broadcast: flags.properties.insert(.broadcast)
        case .read: flags.properties.insert(.read)
        case .write: flags.properties.insert(.write)
        case .notify: flags.properties.insert(.notify)
        case .indicate: flags.properties.insert(.indicate)
        case .writeWithoutResponse: flags.properties.insert(.writeWithoutResponse)
        case .authenticatedSignedWrites: flags.properties.insert(.authenticatedSignedWrites)
        case .extendedProperties: flags.properties.insert(.extendedProperties)
        case .authorize: flags.authorize = true
        case .reliableWrite: flags.reliableWrite = true
        case .writableAuxiliaries: flags.writableAuxiliaries = true
        default:
            guard let (operation, level) = Self.securityLevels[self] else { return }
            flags.security[keyPath: operation] = max(flags.security[keyPath: operation], level)
        }
    }
}

/// A descriptor flag; the raw value is the BlueZ `Flags` string.
public enum DescriptorFlag: String, Sendable, CaseIterable, Equatable {
    case read, write, authorize
    case encryptRead = "encrypt-read"
    case encryptWrite = "encrypt-write"
    case encryptAuthenticatedRead = "encrypt-authenticated-read"
    case encryptAuthenticatedWrite = "encrypt-authenticated-write"
    case secureRead = "secure-read"
    case secureWrite = "secure-write"
}

extension DescriptorFlag {
    /// Adds what this flag declares to `flags`: what the characteristic flag of the same name declares.
    func declare(in flags: inout CharacteristicFlags) {
        let same: CharacteristicFlag =
            switch self {
            case .read: .read
            case .write: .write
            case .authorize: .authorize
            case .encryptRead: .encryptRead
            case .encryptWrite: .encryptWrite
            case .encryptAuthenticatedRead: .encryptAuthenticatedRead
            case .encryptAuthenticatedWrite: .encryptAuthenticatedWrite
            case .secureRead: .secureRead
            case .secureWrite: .secureWrite
            }
        same.declare(in: &flags)
    }
}

/// When a characteristic's value is rendered again from its template.
public enum Regeneration: String, Sendable, CaseIterable, Equatable {
    /// Once, when the engine starts or resets.
    case never
    /// On every `.connect` event.
    case connection
    /// Before every `.read` of the characteristic.
    case read
}

/// A value given in a profile. Literal forms (`hex`, `utf8`, `base64`) become literal templates.
public struct ValueSource: Sendable, Equatable {
    public var template: Template
    public var regenerate: Regeneration

    public init(template: Template, regenerate: Regeneration = .never) {
        self.template = template
        self.regenerate = regenerate
    }

    public static let empty = ValueSource(template: .literal([]))
}
