import BlueZ
import McuMgr
import Profile

/// The firmware-update target's reboot (`"firmware"` in the profile; ``FirmwareResponder``).
extension Emulator {
    /// The firmware responder, when the profile makes the device a firmware-update target.
    var firmwareResponder: FirmwareResponder? {
        (pipeline.responder as? RoutingResponder)?.routes.values.lazy.compactMap { $0 as? FirmwareResponder }.first
    }

    /// A reset the client asked for, as the device does it: the answer leaves first (Zephyr resets 250 ms after
    /// answering), then the links drop and advertising stops; after the profile's boot time MCUboot has swapped,
    /// reverted or kept the image, the revision characteristic says the running version, and the device advertises
    /// again.
    func rebootFirmware() async {
        guard let firmware = firmwareResponder, !stopped else { return }
        try? await Task.sleep(for: .milliseconds(250))
        log.record(.firmware, detail: "firmware: resetting (\(firmware.target.primary.version) running)")
        await stopAdvertising()
        for address in centrals.connected {
            do {
                try await adapter?.disconnect(central: address)
            } catch {
                log.record(.error, central: address, detail: "firmware reset: \(error.description)")
            }
        }
        let (milliseconds, notes) = engine.resolve(firmware.definition.bootTime, use: "firmware bootTime")
        for case .log(let text) in notes { log.record(.note, detail: text) }
        try? await Task.sleep(for: .milliseconds(milliseconds))
        guard !stopped else { return }
        let boot = firmware.boot()
        switch boot {
        case .same(let image):
            log.record(.firmware, detail: "firmware: booted \(image.version) (nothing pending)")
        case .swapped(let image, let permanent):
            log.record(
                .firmware, detail: "firmware: booted \(image.version), swapped in \(permanent ? "for good" : "for test (not confirmed)")")
        case .reverted(let image):
            log.record(.firmware, detail: "firmware: booted \(image.version): the tested image was not confirmed, MCUboot reverted")
        }
        if let revision = firmware.definition.revision {
            let value = Array(firmware.target.primary.version.description.utf8)
            engine.store(value, for: revision)
            application?.setValue(revision, value: value)
        }
        await registerBootedTable(firmware)
        do {
            try await startAdvertising()
        } catch {
            log.record(.error, detail: "firmware: advertising again after the reset: \(error.description)")
        }
    }
}

extension Emulator {
    /// The GATT table of the version booted (`firmware.services`), registered before the device advertises again, so
    /// every central finds it. bluetoothd keeps a Service Changed for each bonded central that enabled it and
    /// indicates it as that central reconnects (docs/firmware.md); a central that is not bonded is told nothing, as a
    /// real device tells it nothing. Services the version does not decide stay as they were.
    func registerBootedTable(_ firmware: FirmwareResponder) async {
        let definition = firmware.definition
        guard !definition.services.isEmpty else { return }
        let version = firmware.target.primary.version
        let absent = definition.absentServices(running: version, besides: absentServices)
        guard absent != absentServices else { return }
        let added = absentServices.subtracting(absent).sorted()
        let removed = absent.subtracting(absentServices).sorted()
        let changes = [(added, "added"), (removed, "removed")].filter { !$0.0.isEmpty }
            .map { "\($0.0.joined(separator: ", ")) \($0.1)" }
        // Logged by changeTable, with what bluetoothd was told or why the table stayed.
        try? await changeTable(
            absent: absent, change: "firmware: \(version) has another GATT table: " + changes.joined(separator: "; "), kind: .firmware)
    }
}

extension Emulator {
    /// The firmware-update target's slots, upload and reboot (`GET /v1/firmware`); not found for a profile without one.
    public func firmwareStatus() throws(ControlFailure) -> FirmwareSnapshot {
        guard let firmware = firmwareResponder else {
            throw ControlFailure(.notFound, "this profile has no \"firmware\" section: the device takes no firmware updates")
        }
        return firmware.snapshot
    }
}
