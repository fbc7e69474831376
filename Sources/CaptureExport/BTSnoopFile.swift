/// The btsnoop file format (version 1, big-endian) as Android's and BlueZ's HCI logs write it: a 16-byte
/// header, then per record its original and included lengths, flags, cumulative drops, a timestamp in
/// microseconds since year 0, and the data.
public enum BTSnoopFile {
    /// Microseconds from year 0 to the Unix epoch, as btsnoop counts them.
    public static let epochOffset: Int64 = 0x00DC_DDB3_0F2F_8000
    /// The size of a record's header.
    public static let recordHeaderLength = 24

    /// Datalink 1001: bare HCI packets, their kind in the flags.
    public static let hciDatalink: UInt32 = 1001
    /// Datalink 1002: HCI packets behind their H4 (UART) type byte, as Android writes.
    public static let h4Datalink: UInt32 = 1002
    /// Datalink 2001: Linux monitor records (btmon).
    public static let monitorDatalink: UInt32 = 2001

    /// The file header: identification, version 1, datalink.
    public static func header(datalink: UInt32) -> [UInt8] {
        var out = Array("btsnoop\0".utf8)
        out.appendBE32(1)
        out.appendBE32(datalink)
        return out
    }

    /// The flags of an HCI record in datalinks 1001 and 1002: bit 0 set when received (controller to host),
    /// bit 1 set for commands and events.
    public static func flags(received: Bool, commandOrEvent: Bool) -> UInt32 {
        (received ? 1 : 0) | (commandOrEvent ? 2 : 0)
    }

    /// Appends one record holding `data` (of which only the first `kept` bytes are written, for a filtered log),
    /// stamped `timestamp` microseconds after the Unix epoch.
    public static func appendRecord(_ data: [UInt8], kept: Int? = nil, flags: UInt32, timestamp: Int64, to out: inout [UInt8]) {
        let included = kept.map { min(max($0, 0), data.count) } ?? data.count
        out.appendBE32(UInt32(clamping: data.count))
        out.appendBE32(UInt32(clamping: included))
        out.appendBE32(flags)
        out.appendBE32(0)
        out.appendBE64(UInt64(bitPattern: timestamp &+ epochOffset))
        out += data.prefix(included)
    }
}
