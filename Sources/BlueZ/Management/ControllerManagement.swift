import Bluetooth

/// A controller as the kernel's management interface sees it: what bluetoothd's D-Bus API does not offer,
/// chiefly LE privacy (the resolvable private addresses the controller shows instead of its own).
///
/// Every call runs off the caller's executor (the socket blocks up to its timeout) and changing anything needs
/// CAP_NET_ADMIN.
public struct ControllerManagement: Sendable {
    /// The controller index (`hci3` → 3).
    public let index: UInt16

    /// The controller with management index `index`.
    init(index: UInt16) { self.index = index }

    /// The controller behind an adapter named `hciN`; nil for any other name.
    public init?(adapterName: String) {
        guard adapterName.hasPrefix("hci"), let index = UInt16(adapterName.dropFirst(3)), String(index) == adapterName.dropFirst(3) else {
            return nil
        }
        self.index = index
    }

    /// The controller behind `adapterName`; for a name that is not `hciN`, the reason as an error.
    public static func named(_ adapterName: String) throws(ManagementError) -> ControllerManagement {
        guard let controller = ControllerManagement(adapterName: adapterName) else {
            throw .unavailable("\(adapterName) is not a kernel controller name (hciN)")
        }
        return controller
    }

    /// What Read Controller Information answers that gattemu needs.
    public struct Information: Sendable, Equatable {
        /// The controller's public address; ``BluetoothAddress/zero`` when it has none.
        public var publicAddress: BluetoothAddress
        public var supportedSettings: UInt32
        public var currentSettings: UInt32

        public var powered: Bool { currentSettings & 0x0001 != 0 }
        /// LE privacy on: the controller advertises and connects from resolvable private addresses.
        public var privacy: Bool { currentSettings & 0x2000 != 0 }
        public var supportsPrivacy: Bool { supportedSettings & 0x2000 != 0 }
        /// LE Secure Connections enabled (on or only: the kernel does not report "only" apart).
        public var secureConnections: Bool { currentSettings & 0x0800 != 0 }
        public var supportsSecureConnections: Bool { supportedSettings & 0x0800 != 0 }

        /// Parses the return parameters (address, version, manufacturer, supported and current settings, …).
        init?(_ parameters: [UInt8]) {
            guard parameters.count >= 17, let address = BluetoothAddress(littleEndian: parameters[0..<6]) else { return nil }
            publicAddress = address
            supportedSettings = ControllerManagement.uint32(parameters[9..<13])
            currentSettings = ControllerManagement.uint32(parameters[13..<17])
        }
    }

    public func information() async throws(ManagementError) -> Information {
        let index = index
        let parameters = try await Self.offLoop { () throws(ManagementError) in
            try ManagementSocket.send(.readControllerInformation, index: index)
        }
        guard let information = Information(parameters) else {
            throw .unavailable("Read Controller Information: answer too short (\(parameters.count) bytes)")
        }
        return information
    }

    /// Turns LE privacy on with the identity resolving key `irk` (16 bytes: the controller shows resolvable private
    /// addresses made from it) or off (nil). The kernel accepts it only while the controller is powered off.
    public func setPrivacy(irk: [UInt8]?) async throws(ManagementError) {
        if let irk, irk.count != 16 { throw .refused("an identity resolving key has 16 bytes, not \(irk.count)") }
        let index = index
        let parameters = [irk == nil ? 0x00 : 0x01] + (irk ?? [UInt8](repeating: 0, count: 16))
        _ = try await Self.offLoop { () throws(ManagementError) in
            try ManagementSocket.send(.setPrivacy, index: index, parameters: parameters)
        }
    }

    /// Sets the controller's LE Secure Connections mode (`Set Secure Connections`; the kernel's SMP then offers or
    /// requires it). Allowed while powered; bluetoothd sets it only when the controller appears.
    public func setSecureConnections(_ mode: SecureConnectionsMode) async throws(ManagementError) {
        let index = index
        _ = try await Self.offLoop { () throws(ManagementError) in
            try ManagementSocket.send(.setSecureConnections, index: index, parameters: [mode.managementValue])
        }
    }

    /// Throws when this process may not change the controller (no CAP_NET_ADMIN), before anything is changed:
    /// the kernel judges, by answering a Set Static Address that it must refuse while the controller is powered.
    public func checkMayChange(_ information: Information) async throws(ManagementError) {
        guard information.powered else { return }
        let index = index
        do {
            _ = try await Self.offLoop { () throws(ManagementError) in
                try ManagementSocket.send(.setStaticAddress, index: index, parameters: BluetoothAddress.zero.littleEndian)
            }
        } catch .status(_, 0x0B) {
            return  // rejected only because it is powered: this process may change it
        }
    }

    /// Four little-endian bytes of an answer as a number.
    static func uint32(_ bytes: ArraySlice<UInt8>) -> UInt32 { bytes.reversed().reduce(0) { $0 << 8 | UInt32($1) } }

    static func offLoop(_ work: @escaping @Sendable () throws(ManagementError) -> [UInt8]) async throws(ManagementError) -> [UInt8] {
        let result = await Task.detached { () -> Result<[UInt8], ManagementError> in
            do throws(ManagementError) { return .success(try work()) } catch { return .failure(error) }
        }.value
        return try result.get()
    }
}
