import Bluetooth

extension ControllerManagement {
    /// What Read Controller Configuration Information answers: the options the host may configure on the
    /// controller and those it must configure before the controller can be used.
    public struct Configuration: Sendable, Equatable {
        /// Option bits (`mgmt-api.txt`): 0 external configuration, 1 public address.
        public var supportedOptions: UInt32
        public var missingOptions: UInt32

        static let publicAddressOption: UInt32 = 0x0000_0002

        /// The host may give the controller another public address (Set Public Address): only controllers whose
        /// driver knows the vendor command for it.
        public var supportsPublicAddress: Bool { supportedOptions & Self.publicAddressOption != 0 }

        /// Parses the return parameters (manufacturer, supported options, missing options).
        init?(_ parameters: [UInt8]) {
            guard parameters.count >= 10 else { return nil }
            supportedOptions = ControllerManagement.uint32(parameters[2..<6])
            missingOptions = ControllerManagement.uint32(parameters[6..<10])
        }
    }

    public func configuration() async throws(ManagementError) -> Configuration {
        let index = index
        let parameters = try await Self.offLoop { () throws(ManagementError) in
            try ManagementSocket.send(.readControllerConfiguration, index: index)
        }
        guard let configuration = Configuration(parameters) else {
            throw .unavailable("Read Controller Configuration Information: answer too short (\(parameters.count) bytes)")
        }
        return configuration
    }

    /// Gives the controller the public address `address`. The kernel accepts it only while the controller is powered
    /// off and only when ``Configuration/supportsPublicAddress``; it then drops the controller's index and announces
    /// the controller again, as a new one (bluetoothd forgets its settings): find it with
    /// ``controller(withPublicAddress:until:)``.
    public func setPublicAddress(_ address: BluetoothAddress) async throws(ManagementError) {
        let index = index
        _ = try await Self.offLoop { () throws(ManagementError) in
            try ManagementSocket.send(.setPublicAddress, index: index, parameters: address.littleEndian)
        }
    }

    /// The indexes of the configured controllers, from Read Controller Index List's parameters; nil when they are
    /// too short. The count is the kernel's claim: only indexes that arrived are read.
    static func indexes(_ parameters: [UInt8]) -> [UInt16]? {
        guard parameters.count >= 2 else { return nil }
        let claimed = Int(UInt16(parameters[0]) | UInt16(parameters[1]) << 8)
        let arrived = (parameters.count - 2) / 2
        return (0..<min(claimed, arrived)).map { UInt16(parameters[2 + 2 * $0]) | UInt16(parameters[3 + 2 * $0]) << 8 }
    }

    /// The configured controller whose public address is `address`, waiting for it until `deadline` (after Set Public
    /// Address the kernel announces the controller again, perhaps under another index).
    public static func controller(withPublicAddress address: BluetoothAddress, until deadline: ContinuousClock.Instant)
        async throws(ManagementError) -> ControllerManagement
    {
        while true {
            let parameters = try await offLoop { () throws(ManagementError) in
                try ManagementSocket.send(.readControllerIndexList, index: 0xFFFF)
            }
            guard let indexes = indexes(parameters) else {
                throw .unavailable("Read Controller Index List: answer too short (\(parameters.count) bytes)")
            }
            for index in indexes {
                let controller = ControllerManagement(index: index)
                // A controller going away between the list and this question is not an error: look again.
                if let information = try? await controller.information(), information.publicAddress == address { return controller }
            }
            guard ContinuousClock.now < deadline else {
                throw .timedOut("waiting for a controller with public address \(address)")
            }
            try? await Task.sleep(for: .milliseconds(250))
        }
    }
}
