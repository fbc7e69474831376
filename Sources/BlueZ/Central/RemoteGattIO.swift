import Bluetooth
import DBus

/// Reads and writes a remote characteristic or descriptor the way a central's app does (`ReadValue` and
/// `WriteValue` with `offset` and `type`), answering with the device's bytes or the ATT error BlueZ reports.
public enum RemoteGattIO {
    /// How a write goes to the device (BlueZ's `type` option).
    public enum WriteType: String, Sendable {
        /// Write Request (the device answers; long values become prepared writes).
        case request
        /// Write Command (no answer).
        case command
        /// Reliable write (prepared writes, checked, then executed).
        case reliable
    }

    /// `ReadValue` from `offset` (the rest of the value, at most 512 bytes: more is cut).
    public static func read(
        _ path: DBusObjectPath, interface: String, offset: Int, connection: DBusConnection, timeout: Duration = .seconds(30)
    ) async throws(RemoteGattError) -> [UInt8] {
        var options: [String: DBusValue] = [:]
        if offset > 0 { options["offset"] = .uint16(UInt16(clamping: offset)) }
        do {
            let reply = try await connection.call(
                destination: BlueZNames.service, path: path, interface: interface, member: "ReadValue",
                arguments: [.stringVariantDictionary(options)], timeout: timeout)
            guard let bytes = reply.first?.bytes else {
                throw RemoteGattError(.unexpectedMessage("ReadValue answered without bytes"))
            }
            return Array(bytes.prefix(ATTMTU.maximumValueLength))
        } catch let error as RemoteGattError {
            throw error
        } catch {
            throw RemoteGattError(error as? DBusError ?? .disconnected)
        }
    }

    /// `WriteValue` of `value` (at most 512 bytes) at `offset`.
    public static func write(
        _ path: DBusObjectPath, interface: String, value: [UInt8], offset: Int, type: WriteType, connection: DBusConnection,
        timeout: Duration = .seconds(30)
    ) async throws(RemoteGattError) {
        var options: [String: DBusValue] = [:]
        if offset > 0 { options["offset"] = .uint16(UInt16(clamping: offset)) }
        // Descriptors take no write type.
        if interface == BlueZNames.gattCharacteristic { options["type"] = .string(type.rawValue) }
        let bytes = Array(value.prefix(ATTMTU.maximumValueLength))
        do {
            if type == .command {
                // bluetoothd answers a command's call at once; no reply is awaited from the device.
                try await connection.callWithoutReply(
                    destination: BlueZNames.service, path: path, interface: interface, member: "WriteValue",
                    arguments: [.bytes(bytes), .stringVariantDictionary(options)])
            } else {
                _ = try await connection.call(
                    destination: BlueZNames.service, path: path, interface: interface, member: "WriteValue",
                    arguments: [.bytes(bytes), .stringVariantDictionary(options)], timeout: timeout)
            }
        } catch {
            throw RemoteGattError(error)
        }
    }
}
