import Bluetooth
import Replica

/// Writes a recorded device (a ``DeviceReplica``: what `gattemu relay` saw) as the btsnoop HCI log the central's
/// host would have written — datalink 1002 (H4), as Android's `btsnoop_hci.log` — which Wireshark opens and
/// `gattemu import` turns back into the same profile.
///
/// The log holds the central's own address (Read BD_ADDR, or LE Set Random Address), the device's advertising
/// report and scan response, each connection (LE Create Connection, LE Connection Complete as central,
/// Disconnection Complete), an MTU exchange, a full discovery of the table (``GATTDiscovery``), the operations the
/// device refused for security (each characteristic's known levels, as Insufficient Encryption or Authentication),
/// pairing and encryption as seen, reads of the values the conversation does not show, then the conversation in
/// order and with its times. Records are ACL packets of at most 251 bytes on L2CAP channel 4 (ATT).
public enum BTSnoopExport {
    /// How big the file may get.
    public struct Limits: Sendable {
        /// The file stops before the event that would take it past this many bytes (the events after it are left out, and noted).
        public var maximumBytes = 64 << 20

        public init() {}
    }

    /// The file and what could not be written as recorded.
    public struct Output: Sendable {
        public var bytes: [UInt8]
        /// How many records the file holds.
        public var frames: Int
        /// One line each: what was left out or changed (values cut to ATT's 512 bytes, a raised MTU, attributes
        /// without handles, the events past the size limit).
        public var notes: [String]
    }

    /// The btsnoop file of `replica` as seen by the central `central` (of type `centralType`), its first record at
    /// `start` (microseconds since the Unix epoch); event times are seconds after it.
    public static func write(
        _ replica: DeviceReplica, central: BluetoothAddress, centralType: AddressType = .public, start: Int64,
        limits: Limits = Limits()
    ) -> Output {
        var session = ExportSession(replica: replica, central: central, centralType: centralType, start: start, limits: limits)
        session.run()
        return Output(bytes: session.bytes, frames: session.frames, notes: session.notes)
    }
}
