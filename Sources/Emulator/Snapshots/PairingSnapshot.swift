import Bluetooth
import Profile

/// How the device pairs and what pairing is under way: what `GET /v1/pairing` shows once `Control` has put it in
/// the contract's form.
public struct PairingSnapshot: Sendable, Equatable {
    /// What a prompt asks; only these wait for an answer from the control API.
    public enum PromptKind: String, Sendable, CaseIterable {
        /// May the central pair? (accept or refuse)
        case justWorks = "just-works"
        /// Does the central show this number too?
        case numericComparison = "numeric-comparison"
        /// Which passkey does the central show?
        case passkeyEntry = "passkey-entry"
    }

    /// A question of bluetoothd's waiting for an answer.
    public struct Prompt: Sendable, Equatable {
        public var id: UInt64
        /// Nil when bluetoothd named a device gattemu cannot read an address from.
        public var central: BluetoothAddress?
        public var kind: PromptKind
        /// The number to compare (numeric comparison).
        public var passkey: UInt32?
        /// `gattemu relay`'s pairing with the real device: `central` is the device's address.
        public var device = false
    }

    /// The passkey gattemu displayed for the pairing under way.
    public struct Displayed: Sendable, Equatable {
        public var central: BluetoothAddress?
        public var passkey: UInt32
        /// `gattemu relay`'s pairing with the real device: type it on the device.
        public var device = false
    }

    /// The agent is registered with bluetoothd.
    public var agent: Bool
    /// The profile's pairing settings; nil when it needs no agent.
    public var security: SecurityDefinition?
    public var prompt: Prompt?
    public var displayed: Displayed?
}

/// An answer to a pairing prompt from the control API.
public enum PromptReply: Sendable, Equatable {
    /// The passkey (or, for numeric comparison, the number) the central shows.
    case passkey(UInt32)
    case accept(Bool)
}
