import Bluetooth

/// A device's address with its HCI address type; the type is nil for anonymous extended advertising.
/// BR/EDR addresses are public.
public struct DeviceAddress: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var address: BluetoothAddress
    public var type: AddressType?

    public init(_ address: BluetoothAddress, type: AddressType?) {
        self.address = address
        self.type = type
    }

    /// From HCI's address type byte: 0–3 as ``AddressType``, 0xFF anonymous; nil for other values.
    init?(_ address: BluetoothAddress, hciType: UInt8) {
        if hciType == 0xFF {
            self.init(address, type: nil)
        } else if let type = AddressType(rawValue: hciType) {
            self.init(address, type: type)
        } else {
            return nil
        }
    }

    public var description: String { "\(address) (\(type?.description ?? "anonymous"))" }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        if lhs.address != rhs.address { return lhs.address < rhs.address }
        return (lhs.type?.rawValue ?? 0xFF) < (rhs.type?.rawValue ?? 0xFF)
    }
}

/// Where in the capture something happened: its frame and time.
public struct CaptureMoment: Sendable, Hashable {
    public var frame: Int
    /// Microseconds since the Unix epoch.
    public var timestamp: Int64?

    public init(frame: Int, timestamp: Int64?) {
        self.frame = frame
        self.timestamp = timestamp
    }
}
