import BlueZ
import Bluetooth
import Emulator

/// The pairing agent's answers while `gattemu relay` reaches the device and reads its table, before the mirror
/// (and its control API) is up: just works and numeric comparison are accepted, a displayed passkey is typed from
/// `--device-passkey`, and anything else is refused with a line on `say`. Once the mirror runs, the emulator's
/// agent answers both legs (``RelayUpstream/devicePairing``), the control API's prompts included.
public final class DeviceAttachPairing: PairingHandler {
    let device: DeviceQuery
    let adapter: String
    let settings: DevicePairing
    let say: @Sendable (String) -> Void

    /// `adapter`: the one the relay reaches the device on (`--upstream-adapter`); a request about a central on any
    /// other adapter is not the device's, whatever its address or name.
    public init(device: DeviceQuery, adapter: String, settings: DevicePairing, say: @escaping @Sendable (String) -> Void) {
        self.device = device
        self.adapter = adapter
        self.settings = settings
        self.say = say
    }

    public func answer(_ request: PairingRequest, on adapterName: String) async -> PairingAnswer {
        let peer = request.central
        guard adapterName == adapter else {
            say("pairing with \(peer) on \(adapterName) (\(request)): refused (the device is reached on \(adapter))")
            return .reject
        }
        if case .address(let address) = device, address != peer {
            say("pairing with \(peer) (\(request)): refused (not the device)")
            return .reject
        }
        switch settings.decide(request) {
        case .answer(let answer, let why):
            if !why.isEmpty { say("pairing with \(peer): \(request): \(why)") }
            return answer
        case .askForPasskey:
            say(
                "pairing with \(peer): the device displays a passkey: refused for now (give --device-passkey, or answer "
                    + "the prompt of GET /v1/pairing once the mirror is up)")
            return .reject
        case .display(let passkey):
            say("pairing with \(peer): type \(Passkey.digits(passkey)) on the device")
            return .accept
        }
    }

    public func pairingCancelled(released: Bool) async {
        if released { say("bluetoothd released the pairing agent") }
    }
}
