import Bluetooth

extension BlueZStack {
    /// Gives the controller of adapter `adapterName` the public address `address` and returns the adapter as bluetoothd
    /// sees it afterwards, powered, with that address (its name may differ: the kernel may announce the controller
    /// under another index). The adapter is powered off for the change; everything waits at most `timeout`.
    ///
    /// Refuses (``ManagementError/refused(_:)``) when the controller has no public-address configuration option. When
    /// the change fails half-way the controller's previous address is put back (best effort) and the error says so.
    /// Needs CAP_NET_ADMIN.
    public func changePublicAddress(of adapterName: String, to address: BluetoothAddress, timeout: Duration = .seconds(20))
        async throws(ManagementError) -> Adapter
    {
        let controller = try ControllerManagement.named(adapterName)
        guard try await controller.configuration().supportsPublicAddress else {
            throw .refused(
                "\(adapterName) cannot take another public address: the kernel offers no public-address configuration for it "
                    + "(its driver has no command to set one)")
        }
        let adapter = try await bluez { () throws(BlueZError) in try await self.adapter(adapterName) }
        if adapter.address == address, adapter.powered { return adapter }
        let original = try await controller.information().publicAddress
        let deadline = ContinuousClock.now + timeout

        try await bluez { () throws(BlueZError) in try await adapter.set("Powered", .boolean(false)) }
        do {
            try await controller.setPublicAddress(address)
        } catch {
            try? await adapter.set("Powered", .boolean(true))
            throw error
        }
        do {
            let changed = try await ControllerManagement.controller(withPublicAddress: address, until: deadline)
            return try await poweredAdapter("hci\(changed.index)", address: address, until: deadline)
        } catch {
            let back = await putBack(original, after: address)
            throw .unavailable("\(adapterName) did not come back with public address \(address): \(error.description); \(back)")
        }
    }

    /// After a failed change: the controller that took `changed` gets `original` again; says what happened.
    private func putBack(_ original: BluetoothAddress, after changed: BluetoothAddress) async -> String {
        do throws(ManagementError) {
            let controller = try await ControllerManagement.controller(withPublicAddress: changed, until: .now + .seconds(3))
            let name = "hci\(controller.index)"
            if let adapter = try? await adapter(name) { try? await adapter.set("Powered", .boolean(false)) }
            try await controller.setPublicAddress(original)
            let again = try await ControllerManagement.controller(withPublicAddress: original, until: .now + .seconds(10))
            _ = try await poweredAdapter("hci\(again.index)", address: original, until: .now + .seconds(10))
            return "its address \(original) was put back"
        } catch {
            return "putting its address \(original) back failed too: \(error.description)"
        }
    }

    /// Waits until bluetoothd has adapter `name` with `address`, and powers it when bluetoothd did not.
    private func poweredAdapter(_ name: String, address: BluetoothAddress, until deadline: ContinuousClock.Instant)
        async throws(ManagementError) -> Adapter
    {
        var asked = false
        while true {
            if let adapter = try? await adapter(name), adapter.address == address {
                if adapter.powered { return adapter }
                if !asked {
                    // bluetoothd powers a new adapter only with AutoEnable; a refusal while it sets it up is retried.
                    asked = (try? await adapter.set("Powered", .boolean(true))) != nil
                }
            }
            guard ContinuousClock.now < deadline else {
                throw .timedOut("waiting for bluetoothd to power \(name) with address \(address)")
            }
            try? await Task.sleep(for: .milliseconds(250))
        }
    }

    /// Runs a bluetoothd call, its error as a management failure (one line).
    private func bluez<T>(_ work: () async throws(BlueZError) -> T) async throws(ManagementError) -> T {
        do {
            return try await work()
        } catch {
            throw .unavailable(error.description)
        }
    }
}
