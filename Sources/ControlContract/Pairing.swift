import Lexical

/// `GET /v1/pairing`: how the device pairs (its profile's `security`) and what bluetoothd is asking now.
public struct PairingStatus: ContractType, Equatable {
    /// gattemu's pairing agent is registered with bluetoothd (the profile has a `security` section or a
    /// characteristic that needs encryption).
    public var agent: Bool
    /// IO capability: DisplayOnly, DisplayYesNo, KeyboardOnly, NoInputNoOutput, KeyboardDisplay.
    public var io: String?
    /// `accept` or `refuse`.
    public var pairing: String?
    /// `auto` or `api`: who confirms numeric comparison and just works.
    public var confirm: String?
    /// A question waiting for `POST /v1/pairing`.
    public var prompt: PairingPrompt?
    /// The passkey gattemu showed last, for the central's user to type.
    public var displayed: DisplayedPasskey?

    public init(
        agent: Bool, io: String? = nil, pairing: String? = nil, confirm: String? = nil, prompt: PairingPrompt? = nil,
        displayed: DisplayedPasskey? = nil
    ) {
        self.agent = agent
        self.io = io
        self.pairing = pairing
        self.confirm = confirm
        self.prompt = prompt
        self.displayed = displayed
    }

    public static let schemaName = "PairingStatus"
    public static var schema: Schema {
        .object([
            required("agent", .boolean),
            optional("io", .string(enumeration: ["DisplayOnly", "DisplayYesNo", "KeyboardOnly", "NoInputNoOutput", "KeyboardDisplay"])),
            optional("pairing", .string(enumeration: ["accept", "refuse"])),
            optional("confirm", .string(enumeration: ["auto", "api"])),
            optional("prompt", PairingPrompt.reference),
            optional("displayed", DisplayedPasskey.reference),
        ])
    }
    public static var examples: [PairingStatus] {
        [
            PairingStatus(
                agent: true, io: "DisplayYesNo", pairing: "accept", confirm: "api",
                prompt: PairingPrompt(id: 3, central: "AA:BB:CC:DD:EE:01", kind: .numericComparison, passkey: "123456"),
                displayed: DisplayedPasskey(central: "AA:BB:CC:DD:EE:02", passkey: "012345")),
            PairingStatus(
                agent: true, io: "KeyboardDisplay", pairing: "accept", confirm: "auto",
                prompt: PairingPrompt(id: 4, central: "D0:1F:A6:44:B3:6F", kind: .passkeyEntry, device: true),
                displayed: DisplayedPasskey(central: "D0:1F:A6:44:B3:6F", passkey: "654321", device: true)),
        ]
    }
}

/// What a pairing prompt asks.
public enum PairingPromptKind: String, Codable, Sendable, CaseIterable {
    /// May the central pair? (accept or refuse)
    case justWorks = "just-works"
    /// Does the central show this number too?
    case numericComparison = "numeric-comparison"
    /// Which passkey does the central show?
    case passkeyEntry = "passkey-entry"

    static var schema: Schema { .string(enumeration: allCases.map(\.rawValue)) }
}

/// A pairing question waiting for `POST /v1/pairing` (refused when nobody answers within 50 s).
public struct PairingPrompt: ContractType, Equatable {
    /// Names the prompt in an answer: a newer question (another central's) gets another id, and an answer naming
    /// an id that no longer waits is refused instead of going to it.
    public var id: Int
    public var central: String
    public var kind: PairingPromptKind
    /// Six digits, for numeric comparison.
    public var passkey: String?
    /// True when `gattemu relay` pairs with the real device: `central` is then the device's address, and a
    /// passkey entry asks for the passkey the device displays.
    public var device: Bool?

    public init(id: Int, central: String, kind: PairingPromptKind, passkey: String? = nil, device: Bool? = nil) {
        self.id = id
        self.central = central
        self.kind = kind
        self.passkey = passkey
        self.device = device
    }

    public static let schemaName = "PairingPrompt"
    public static var schema: Schema {
        .object([
            required("id", promptID),
            required("central", .string(pattern: Patterns.address)),
            required("kind", PairingPromptKind.schema),
            optional("passkey", .string(pattern: Patterns.passkey)),
            optional("device", .boolean),
        ])
    }
    public static var examples: [PairingPrompt] {
        [
            PairingPrompt(id: 1, central: "AA:BB:CC:DD:EE:01", kind: .passkeyEntry),
            PairingPrompt(id: 2, central: "AA:BB:CC:DD:EE:01", kind: .numericComparison, passkey: "000042"),
            PairingPrompt(id: 3, central: "D0:1F:A6:44:B3:6F", kind: .passkeyEntry, device: true),
        ]
    }

    /// A prompt's id: 1, 2, … for the run.
    static var promptID: Schema { .integer(minimum: 1, maximum: UInt64(Int64.max)) }
}

/// A passkey gattemu displayed (`DisplayPasskey`): the central's user types it.
public struct DisplayedPasskey: ContractType, Equatable {
    public var central: String
    /// Six digits.
    public var passkey: String
    /// True when `gattemu relay` pairs with the real device, which asks for this passkey: type it on the device.
    public var device: Bool?

    public init(central: String, passkey: String, device: Bool? = nil) {
        self.central = central
        self.passkey = passkey
        self.device = device
    }

    public static let schemaName = "DisplayedPasskey"
    public static var schema: Schema {
        .object([
            required("central", .string(pattern: Patterns.address)), required("passkey", .string(pattern: Patterns.passkey)),
            optional("device", .boolean),
        ])
    }
    public static var examples: [DisplayedPasskey] {
        [
            DisplayedPasskey(central: "AA:BB:CC:DD:EE:01", passkey: "012345"),
            DisplayedPasskey(central: "D0:1F:A6:44:B3:6F", passkey: "654321", device: true),
        ]
    }
}

/// `POST /v1/pairing`: the answer to the prompt `prompt` (its id) — `{"prompt": 1, "passkey": "123456"}` (passkey
/// entry) or `{"prompt": 1, "accept": true|false}`.
public struct PairingAnswerBody: ContractType, Equatable {
    public var prompt: Int
    public var passkey: String?
    public var accept: Bool?

    public init(prompt: Int, passkey: String? = nil, accept: Bool? = nil) {
        self.prompt = prompt
        self.passkey = passkey
        self.accept = accept
    }

    public static let schemaName = "PairingAnswer"
    public static var schema: Schema {
        .described(
            "The prompt's id (from GET /v1/pairing; an answer for a prompt no longer waiting is refused with 409) and "
                + "exactly one of passkey (six digits, for passkey entry; a number 0…999999 works too) and accept",
            .oneOf([
                .object([
                    required("prompt", PairingPrompt.promptID),
                    required("passkey", .oneOf([.string(pattern: Patterns.passkey), .integer(minimum: 0, maximum: 999_999)])),
                ]),
                .object([required("prompt", PairingPrompt.promptID), required("accept", .boolean)]),
            ]))
    }
    public static var examples: [PairingAnswerBody] {
        [PairingAnswerBody(prompt: 1, passkey: "123456"), PairingAnswerBody(prompt: 2, accept: true)]
    }
}

/// `POST /v1/pairing`: the prompt that was answered.
public struct PairingAnswered: ContractType, Equatable {
    public var ok: Bool
    public var central: String
    public var kind: PairingPromptKind

    public init(central: String, kind: PairingPromptKind) {
        ok = true
        self.central = central
        self.kind = kind
    }

    public static let schemaName = "PairingAnswered"
    public static var schema: Schema {
        .object([
            required("ok", .trueFlag), required("central", .string(pattern: Patterns.address)),
            required("kind", PairingPromptKind.schema),
        ])
    }
    public static var examples: [PairingAnswered] { [PairingAnswered(central: "AA:BB:CC:DD:EE:01", kind: .passkeyEntry)] }
}

/// A central paired with the adapter, as bluetoothd keeps it.
public struct Bond: ContractType, Equatable {
    public var central: String
    /// Keys stored: they outlive restarts of gattemu and bluetoothd.
    public var bonded: Bool
    public var connected: Bool
    /// `public` or `random`.
    public var addressType: String

    public init(central: String, bonded: Bool, connected: Bool, addressType: String) {
        self.central = central
        self.bonded = bonded
        self.connected = connected
        self.addressType = addressType
    }

    public static let schemaName = "Bond"
    public static var schema: Schema {
        .object([
            required("central", .string(pattern: Patterns.address)), required("bonded", .boolean),
            required("connected", .boolean), required("addressType", .string),
        ])
    }
    public static var examples: [Bond] { [Bond(central: "AA:BB:CC:DD:EE:01", bonded: true, connected: false, addressType: "public")] }
}

/// `GET /v1/bonds`.
public struct BondList: ContractType, Equatable {
    public var bonds: [Bond]
    public init(bonds: [Bond]) { self.bonds = bonds }
    public static let schemaName = "BondList"
    public static var schema: Schema { .object([required("bonds", .array(Bond.reference))]) }
    public static var examples: [BondList] { [BondList(bonds: Bond.examples)] }
}

/// `DELETE /v1/bonds/{address}`: bluetoothd forgot the central.
public struct BondForgotten: ContractType, Equatable {
    public var ok: Bool
    public var central: String
    public init(central: String) {
        ok = true
        self.central = central
    }
    public static let schemaName = "BondForgotten"
    public static var schema: Schema { .object([required("ok", .trueFlag), required("central", .string(pattern: Patterns.address))]) }
    public static var examples: [BondForgotten] { [BondForgotten(central: "AA:BB:CC:DD:EE:01")] }
}

/// An answer to a pairing prompt, as `POST /v1/pairing` decodes it (``PairingAnswerBody``).
public enum PairingReply: Sendable, Equatable {
    case passkey(UInt32)
    case accept(Bool)
}

/// `PUT /v1/services/{id}`: `{"present": true}` adds the profile's service to the GATT table, `false` removes it.
public struct ServiceBody: ContractType, Equatable {
    public var present: Bool
    public init(present: Bool) { self.present = present }
    public static let schemaName = "ServiceRequest"
    public static var schema: Schema { .object([required("present", .boolean)]) }
    public static var examples: [ServiceBody] { [ServiceBody(present: true)] }
}

/// `PUT /v1/services/{id}`: the service's presence now, and whether the table changed (Service Changed sent).
public struct ServiceResult: ContractType, Equatable {
    public var ok: Bool
    public var service: String
    public var present: Bool
    public var changed: Bool
    public init(service: String, present: Bool, changed: Bool) {
        ok = true
        self.service = service
        self.present = present
        self.changed = changed
    }
    public static let schemaName = "ServiceResult"
    public static var schema: Schema {
        .object([required("ok", .trueFlag), required("service", .string), required("present", .boolean), required("changed", .boolean)])
    }
    public static var examples: [ServiceResult] { [ServiceResult(service: "update", present: true, changed: true)] }
}
