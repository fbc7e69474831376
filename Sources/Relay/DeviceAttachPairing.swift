import BlueZ
import Bluetooth
import Emulator

/// The pairing agent's answers while `gattemu relay` reaches the device and reads its table, before the mirror
/// (and its control API) is up: just works and numeric comparison are accepted, a displayed passkey is typed from
/// `--device-passkey`, and anything else is refused with a line on `say`. Once the mirror runs, the emulator's
/// agent answers both legs (``RelayUpstream/devicePairing``), the control API's prompts included.
public final class DeviceAttachPairing: PairingHandler {
    let device: DeviceQuery
    let settings: DevicePairing
    let say: @Sendable (String) -> Void

    public init(device: DeviceQuery, settings: DevicePairing, say: @escaping @Sendable (String) -> Void) {
        self.device = device
        self.settings = settings
        self.say = say
    }

    public func answer(_ request: PairingRequest) async -> PairingAnswer {
        let peer = request.central
        if case .address(let address) = device, address != peer {
            say("pairing with \(peer) (\(request)): refused (not the device)")
            return .reject
        }
        switch request {
        case .pinCode:
            say("pairing with \(peer): \(request): refused (LE only)")
            return .reject
        case .service:
            return .accept
        case _ where !settings.accept:
            say("pairing with \(peer): \(request): refused (--device-pairing refuse)")
            return .reject
        case .authorization, .confirmation:
            say("pairing with \(peer): \(request): accepted")
            return .accept
        case .passkeyEntry:
            guard let passkey = settings.passkey else {
                say(
                    "pairing with \(peer): the device displays a passkey: refused for now (give --device-passkey, or answer "
                        + "the prompt of GET /v1/pairing once the mirror is up)")
                return .reject
            }
            say("pairing with \(peer): \(request): typed --device-passkey")
            return .passkey(passkey)
        case .passkeyDisplay(_, let passkey, _):
            say("pairing with \(peer): type \(Passkey.digits(passkey)) on the device")
            return .accept
        }
    }

    public func pairingCancelled(released: Bool) async {
        if released { say("bluetoothd released the pairing agent") }
    }
}
