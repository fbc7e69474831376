import BlueZ
import Bluetooth

/// The real device behind `gattemu relay`: the emulator forwards what a central does to it instead of answering
/// from the profile's rules, and passes on its answers and ATT errors (faults act on both sides as on an emulated
/// device). Attach with ``Emulator/relay(to:)`` before ``Emulator/start()``.
///
/// The device's notifications come back through ``Emulator/relayNotification(_:value:indicate:)``, its link's
/// state through ``Emulator/deviceLost(_:)`` and ``Emulator/deviceBack()``. What bluetoothd asks while it pairs
/// with the device (the same agent answers both legs) is answered as ``devicePairing`` says.
public protocol RelayUpstream: AnyObject, Sendable {
    /// The device's address: pairing requests naming it on ``deviceAdapter`` are the device's leg, not a phone's.
    var deviceAddress: BluetoothAddress { get }
    /// The adapter the relay reaches the device on (`hci1`): a central on any other adapter is not the device,
    /// whatever address it takes.
    var deviceAdapter: String { get }
    /// How the relay answers the device's pairing.
    var devicePairing: DevicePairing { get }
    /// Reads the device's characteristic or descriptor from `offset`.
    func read(_ attribute: GattAttributeID, offset: Int) async throws(ATTError) -> [UInt8]
    /// Writes `value` at `offset`; `withResponse` false for a Write Command.
    func write(_ attribute: GattAttributeID, value: [UInt8], offset: Int, withResponse: Bool) async throws(ATTError)
    /// Subscribes to the device's characteristic (the first central subscribed) or unsubscribes (the last one left).
    func setSubscribed(_ characteristic: CharacteristicID, _ subscribed: Bool) async throws(ATTError)
    /// A central connected to or disconnected from the mirror.
    func central(_ central: BluetoothAddress, connected: Bool) async
    /// Returns once the Write Commands sent to the device before the call have left the device side's bluetoothd
    /// for the link: it sends them as soon as it takes them and queues what the link cannot carry yet, and sends a
    /// request only when no command waits, so a request's answer (any answer) is the only sign a central has. What
    /// was asked, for the event log; nil when the device has nothing to ask (the commands are then not bounded).
    func checkLink() async -> String?
}

/// How the relay pairs with the device when bluetoothd asks (the device refused an operation for security, or
/// asked to pair): just works and numeric comparison are accepted; a passkey the device displays is typed from
/// `passkey`, else asked of the control API (`GET`/`POST /v1/pairing`, a prompt with `device: true`).
public struct DevicePairing: Sendable, Equatable {
    /// The device's static passkey (`gattemu relay --device-passkey`); nil: the control API types it.
    public var passkey: UInt32?
    /// Whether the relay pairs with the device at all (`--device-pairing refuse` shows what a phone sees of a device
    /// the relay could not pair with).
    public var accept: Bool

    public init(passkey: UInt32? = nil, accept: Bool = true) {
        self.passkey = passkey
        self.accept = accept
    }

    /// What the relay does with one of bluetoothd's questions about the device, before and after the mirror runs.
    public enum Decision: Sendable, Equatable {
        /// Answer at once; `why` is the log's word for it (empty: nothing to log).
        case answer(PairingAnswer, why: String)
        /// The device displays a passkey and none was given: the control API is asked (once it is up).
        case askForPasskey
        /// The device asks the relay to show `passkey` for typing on it; accepted.
        case display(UInt32)
    }

    /// The one rule both agents follow (``Emulator`` and the agent used while the table is read).
    public func decide(_ request: PairingRequest) -> Decision {
        switch request {
        case .pinCode: .answer(.reject, why: "refused (LE only)")
        case .service: .answer(.accept, why: "")
        case _ where !accept: .answer(.reject, why: "refused (--device-pairing refuse)")
        case .authorization, .confirmation: .answer(.accept, why: "accepted")
        case .passkeyEntry: passkey.map { .answer(.passkey($0), why: "typed --device-passkey") } ?? .askForPasskey
        case .passkeyDisplay(_, let shown, _): .display(shown)
        }
    }

    /// The IO capability of bluetoothd's agent while it relays: the kernel takes one for the whole machine, so it
    /// must serve both legs. KeyboardDisplay types a device's passkey and gives a phone numeric comparison (an
    /// authenticated link) or passkey entry, whichever the phone can do.
    public static let agentCapability: IOCapability = .keyboardDisplay
}

/// One notification or indication from the device, as the relay hands it to the emulator.
public struct RelayedNotification: Sendable, Equatable {
    public var characteristic: CharacteristicID
    public var value: [UInt8]
    public var indicate: Bool

    public init(characteristic: CharacteristicID, value: [UInt8], indicate: Bool) {
        self.characteristic = characteristic
        self.value = value
        self.indicate = indicate
    }
}
