import BlueZ
import Bluetooth
import ControlContract

/// The address centrals see: gattemu can give the adapter a new random static address, as a device that comes
/// back after a factory reset (see docs/pairing.md, "Address change").
struct AddressState {
    /// The random static address gattemu set; nil while the adapter has the address it had at start.
    var current: BluetoothAddress?
    /// What Set Static Address restores (zero, or the static address bluetoothd gave a controller without a
    /// public one); known from the first change.
    var original: BluetoothAddress?
}

extension Emulator {
    /// Gives the adapter `requested` (a random static address, a new random one, or the original back): the
    /// adapter is powered off for the change (connected centrals are disconnected), advertisements and the device
    /// name follow the new address, and the adapter is powered on again. Needs root (CAP_NET_ADMIN) and an LE-only
    /// controller (BR/EDR off): the kernel uses a static address only then.
    public func changeAddress(_ requested: AddressRequest) async throws(ControlFailure) -> AddressChanged {
        guard let adapter, stack != nil, !stackLost else { throw ControlFailure(.unavailable, "not registered with bluetoothd: no adapter to change") }
        guard let controller = ControllerManagement(adapterName: adapter.name) else {
            throw ControlFailure(.unavailable, "\(adapter.name) is not a kernel controller name (hciN)")
        }
        let information: ControllerManagement.Information
        do {
            information = try await controller.information()
            try await controller.checkMayChange(information)
        } catch {
            throw ControlFailure(.unavailable, error.description)
        }
        guard !information.classicEnabled else {
            throw ControlFailure(.conflict, "\(adapter.name) has BR/EDR on, and the kernel uses a static address only when it is off: "
                                 + "run `btmgmt --index \(controller.index) power off; btmgmt --index \(controller.index) bredr off` first")
        }
        let original = address.original ?? (information.publicAddress == .zero ? BluetoothAddress(adapter.address) ?? .zero : .zero)
        let target: BluetoothAddress
        switch requested {
        case .random: target = .randomStatic()
        case .original: target = original
        case .address(let text):
            guard let typed = BluetoothAddress(text), typed.isValidStaticAddress else {
                throw ControlFailure(.invalid, "\(text.prefix(40)) is not a random static address (two most significant bits set, e.g. C0:11:22:33:44:55)")
            }
            target = typed
        }
        let previous = address.current?.description ?? adapter.address
        let now = target == .zero ? information.publicAddress.description : target.description

        faultState.silencedUntilResume += 1
        await stopAdvertising()
        log.record(.note, detail: "address change: powering \(adapter.name) off to give it \(now)")
        var failure: String?
        do throws(BlueZError) {
            try await adapter.set("Powered", .boolean(false))
            do {
                try await controller.setStaticAddress(target)
                address.original = original
                address.current = target == original ? nil : target
                engine.setAdapterAddress(now)
            } catch {
                failure = error.description
            }
            try await adapter.set("Powered", .boolean(true))
        } catch {
            failure = (failure.map { $0 + "; " } ?? "") + error.description
        }
        if failure == nil, let name = engine.deviceName() { try? await adapter.setAlias(name) }
        faultState.silencedUntilResume -= 1
        if faultState.silencedUntilResume == 0, engine.isAdvertising, !stopped { await resumeAdvertising() }
        if let failure {
            log.record(.error, detail: "address change to \(now) failed: \(failure)")
            throw ControlFailure(.unavailable, "address change failed: \(failure)")
        }
        log.record(.note, detail: "address of \(adapter.name) changed: centrals now find the device at \(now)"
                   + (target == .zero ? " (its public address)" : " (random static)") + ", was \(previous)")
        return AddressChanged(adapter: adapter.name, address: now, previous: previous, randomStatic: target != .zero)
    }

    /// At stop: the adapter gets its original address back (best effort, logged).
    func restoreAddress() async {
        guard address.current != nil, let adapter, !stackLost else { return }
        do throws(ControlFailure) {
            _ = try await changeAddress(.original)
        } catch {
            log.record(.error, detail: "\(adapter.name) keeps \(address.current?.description ?? "its address"): \(error.message)")
        }
    }
}
