import DBus
import TextEscaping

/// Why acting as a central failed; the description is a one-line reason fit for a user.
public enum CentralError: Error, Sendable, CustomStringConvertible {
    /// The stack itself: no bus, no bluetoothd, no such adapter, a refused call before any device was involved.
    case stack(BlueZError)
    /// No device matching the query was seen within the scan.
    case deviceNotFound(DeviceQuery, adapter: String, scanned: Duration, seen: Int)
    /// More than one device matches the query (each with its address and name).
    case ambiguous(DeviceQuery, matches: [DeviceProperties])
    /// Connecting failed (every attempt), or services were not resolved in time.
    case connectFailed(address: String, reason: String)
    /// The device disconnected or was removed before its GATT table was walked and read.
    case lost(address: String, reason: String)
    /// BlueZ refused or failed a call.
    case call(String, DBusError)

    public var description: String {
        switch self {
        case .stack(let error):
            return error.description
        case .deviceNotFound(let query, let adapter, let scanned, let seen):
            return
                "no device \(query) seen on \(adapter) within \(scanned.wholeSeconds) s (\(seen) other device\(seen == 1 ? "" : "s") seen)"
        case .ambiguous(let query, let matches):
            let listed = matches.prefix(8).map { device in
                var text = device.address?.description ?? device.path.rawValue
                if let name = device.name { text += " \"\(TerminalText.escaped(name, limit: 120))\"" }
                if let rssi = device.rssi { text += " (\(rssi) dBm)" }
                return text
            }
            let more = matches.count > 8 ? " and \(matches.count - 8) more" : ""
            return "\(matches.count) devices match \(query): \(listed.joined(separator: ", "))\(more); give one address"
        case .connectFailed(let address, let reason):
            return "cannot connect to \(address): \(reason)"
        case .lost(let address, let reason):
            return "lost \(address) before the clone was complete: \(reason)"
        case .call(let what, let error):
            return "\(what): \(TerminalText.escaped(error.description, limit: 200))"
        }
    }
}

extension Duration {
    /// Whole seconds, rounded (for messages).
    var wholeSeconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds + (attoseconds >= 500_000_000_000_000_000 ? 1 : 0)
    }

    /// Seconds as a `Double`.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
