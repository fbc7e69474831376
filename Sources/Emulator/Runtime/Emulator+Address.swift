import BlueZ
import Bluetooth

/// The address centrals see: gattemu can have the adapter show a new address, as a device that comes back from a
/// factory reset under another one (docs/pairing.md, "Address change").
struct AddressState {
    /// The identity resolving key gattemu gave the controller; nil while it shows its own address.
    var key: [UInt8]?
    /// How many times the address changed.
    var changes = 0
}

extension Emulator {
    /// Has the adapter show a new address (`.random`: LE privacy with a fresh identity resolving key, so the
    /// controller advertises and connects from resolvable private addresses no earlier central can resolve) or its
    /// own again (`.original`). The adapter is powered off for the change (connected centrals are disconnected) and
    /// on again. Needs root (CAP_NET_ADMIN). Why not a new random static address: bluetoothd serves GATT only on the
    /// identity address it read when the adapter appeared, so a central at a new static address gets no answers.
    public func changeAddress(_ requested: AddressChoice) async throws(ControlFailure) -> AddressChange {
        guard let adapter, stack != nil else { throw ControlFailure(.conflict, "no adapter to change: gattemu has not reached bluetoothd") }
        guard !stackLost else { throw ControlFailure(.unavailable, "bluetoothd is gone: the adapter cannot be changed until it is back") }
        let controller: ControllerManagement
        let information: ControllerManagement.Information
        do {
            controller = try ControllerManagement.named(adapter.name)
            information = try await controller.information()
            try await controller.checkMayChange(information)
        } catch {
            throw ControlFailure(.unavailable, error.description)
        }
        guard information.supportsPrivacy else {
            throw ControlFailure(.conflict, "\(adapter.name) does not support LE privacy: its address cannot change")
        }
        if address.key == nil, information.privacy {
            throw ControlFailure(
                .conflict,
                "\(adapter.name) already uses resolvable private addresses (bluetoothd's Privacy setting): "
                    + "its address changes on its own; turn Privacy off in main.conf to have gattemu change it")
        }
        let key: [UInt8]?
        switch requested {
        case .random:
            var generator = SystemRandomNumberGenerator()
            key = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        case .original:
            key = nil
            if address.key == nil {
                return AddressChange(adapter: adapter.name, identity: adapter.address, irk: nil, changes: address.changes)
            }
        }
        // The key itself is a secret (whoever has it can follow the device): only the answer to the request carries it.
        let now = key == nil ? "its own address \(adapter.address)" : "resolvable private addresses of a new key"

        faultState.silencedUntilResume += 1
        await stopAdvertising()
        log.record(.note, detail: "address change: powering \(adapter.name) off to have it show \(now)")
        var failure: String?
        do throws(BlueZError) {
            try await adapter.set("Powered", .boolean(false))
            do {
                try await controller.setPrivacy(irk: key)
                address.key = key
                address.changes += 1
            } catch {
                failure = error.description
            }
            try await adapter.set("Powered", .boolean(true))
        } catch {
            failure = (failure.map { $0 + "; " } ?? "") + error.description
        }
        faultState.silencedUntilResume -= 1
        if faultState.silencedUntilResume == 0, engine.isAdvertising, !stopped { await resumeAdvertising() }
        if let failure {
            log.record(.error, detail: "address change failed: \(failure)")
            throw ControlFailure(.unavailable, "address change failed: \(failure)")
        }
        log.record(.note, detail: "address of \(adapter.name) changed: centrals now find the device at \(now)")
        return AddressChange(adapter: adapter.name, identity: adapter.address, irk: key, changes: address.changes)
    }

    /// At stop: the adapter shows its own address again (best effort, logged).
    func restoreAddress() async {
        guard address.key != nil, let adapter, !stackLost else { return }
        do throws(ControlFailure) {
            _ = try await changeAddress(.original)
        } catch {
            log.record(.error, detail: "\(adapter.name) keeps resolvable private addresses: \(error.message)")
        }
    }

}
