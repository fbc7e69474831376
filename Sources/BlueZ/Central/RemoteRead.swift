import Bluetooth
import DBus

/// One `ReadValue` of a remote characteristic or descriptor and what came of it.
public struct RemoteRead: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        /// The value (at most 512 bytes: more is cut, see `truncated`).
        case value([UInt8], truncated: Bool)
        case failed(RemoteGattError)
    }

    public var path: DBusObjectPath
    /// When it was answered.
    public var at: ContinuousClock.Instant
    public var outcome: Outcome
    /// Whether BlueZ paired with the device while the read was under way (it does so by itself when a
    /// device asks for encryption, and repeats the read).
    public var pairedDuringRead: Bool
    /// Whether the device was paired when the read was answered.
    public var pairedAfter: Bool

    /// Reads `path` (`interface` is `GattCharacteristic1` or `GattDescriptor1`) with empty options. A read that
    /// got no reply within `timeout` while the device stayed connected is made once more: bluetoothd, when the
    /// device asks for encryption, pairs and repeats the request by itself, and on a loaded machine the pairing
    /// can outlast the call (its answer is then lost, though the link is now encrypted). The second request waits
    /// behind the first on the device's ATT channel, so it is answered once bluetoothd is done, or times out too.
    public static func read(
        _ path: DBusObjectPath, interface: String, device: RemoteDevice, timeout: Duration = .seconds(10)
    ) async -> RemoteRead {
        let pairedBefore = device.properties.paired
        var outcome = await readOnce(path, interface: interface, device: device, timeout: timeout)
        if case .failed(let error) = outcome, error.name == DBusError.Name.noReply, device.properties.connected {
            outcome = await readOnce(path, interface: interface, device: device, timeout: timeout)
        }
        let pairedAfter = device.properties.paired
        return RemoteRead(path: path, at: .now, outcome: outcome, pairedDuringRead: !pairedBefore && pairedAfter, pairedAfter: pairedAfter)
    }

    private static func readOnce(
        _ path: DBusObjectPath, interface: String, device: RemoteDevice, timeout: Duration
    ) async -> Outcome {
        do {
            let reply = try await device.adapter.stack.connection.call(
                destination: BlueZNames.service, path: path, interface: interface, member: "ReadValue",
                arguments: [.stringVariantDictionary([:])], timeout: timeout)
            guard let bytes = reply.first?.bytes else {
                return .failed(RemoteGattError(.unexpectedMessage("ReadValue answered without bytes")))
            }
            return .value(Array(bytes.prefix(ATTMTU.maximumValueLength)), truncated: bytes.count > ATTMTU.maximumValueLength)
        } catch {
            return .failed(RemoteGattError(error))
        }
    }
}
