import Bluetooth

/// What bluetoothd asks a pairing agent (`org.bluez.Agent1`) while a central pairs.
///
/// `central` is the address from the device object bluetoothd names.
public enum PairingRequest: Sendable, Equatable, CustomStringConvertible {
    /// Just works: may this central pair (`RequestAuthorization`)?
    case authorization(central: BluetoothAddress)
    /// Numeric comparison: does the central show this number too (`RequestConfirmation`)?
    case confirmation(central: BluetoothAddress, passkey: UInt32)
    /// Passkey entry, the device types: which passkey does the central show (`RequestPasskey`)?
    case passkeyEntry(central: BluetoothAddress)
    /// Passkey entry, the device displays: the central must type this (`DisplayPasskey`); `entered` digits
    /// typed so far when the central sends keypress notifications. Answered by nothing.
    case passkeyDisplay(central: BluetoothAddress, passkey: UInt32, entered: UInt16)
    /// Classic (BR/EDR) PIN code requests, which an LE peripheral does not take.
    case pinCode(central: BluetoothAddress)
    /// May this central use a profile (`AuthorizeService`)?
    /// `uuid` nil when bluetoothd named something that is no UUID.
    case service(central: BluetoothAddress, uuid: BluetoothUUID?)

    public var central: BluetoothAddress {
        switch self {
        case .authorization(let central), .confirmation(let central, _), .passkeyEntry(let central),
            .passkeyDisplay(let central, _, _), .pinCode(let central), .service(let central, _):
            central
        }
    }

    public var description: String {
        switch self {
        case .authorization: "just works"
        case .confirmation(_, let passkey): "numeric comparison \(Passkey.digits(passkey))"
        case .passkeyEntry: "passkey entry (gattemu types)"
        case .passkeyDisplay(_, let passkey, let entered):
            "passkey \(Passkey.digits(passkey)) displayed" + (entered > 0 ? ", \(entered) typed" : "")
        case .pinCode: "PIN code (classic)"
        case .service(_, let uuid): "service \(uuid?.description ?? "(not a UUID)")"
        }
    }
}

/// A pairing agent's answer to a ``PairingRequest``.
public enum PairingAnswer: Sendable, Equatable {
    case accept
    /// Answers `RequestPasskey`.
    case passkey(UInt32)
    /// `org.bluez.Error.Rejected`: the pairing fails.
    case reject
    /// `org.bluez.Error.Canceled`.
    case cancel
}

/// Answers what bluetoothd asks gattemu's pairing agent; may wait (bluetoothd gives it 60 s), never blocks.
///
/// bluetoothd has one default agent for all its adapters: `adapter` (`hci1`) is the adapter whose device object the
/// request names, and a handler answers only for the adapters it serves (a central taking another device's address
/// on another adapter is not that device).
public protocol PairingHandler: Sendable {
    func answer(_ request: PairingRequest, on adapter: String) async -> PairingAnswer
    /// bluetoothd gave up on the request under way (`Cancel`), or dropped the agent (`Release`).
    func pairingCancelled(released: Bool) async
}
