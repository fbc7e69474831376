import BlueZ

/// What bluetoothd's `[GATT] ExchangeMTU` means for a firmware-update target. SMP clients write a frame in pieces of
/// ATT MTU − 3 bytes (bleak's `max_write_without_response_size`: smpclient, smpmgr; Android apps), so at MTU 517 a
/// piece is 514 bytes; bluetoothd refuses an attribute value over 512 bytes and drops such a Write Command without a
/// word (src/shared/gatt-server.c, `check_length`): the upload's first frame never completes and the client times
/// out. ExchangeMTU 515 or less keeps every piece within 512 bytes (docs/firmware.md).
enum FirmwareMTUAdvice {
    /// The largest MTU at which an MTU − 3 byte piece is still an attribute value bluetoothd takes.
    static let largestSafeMTU = 515
    /// BlueZ's default ExchangeMTU (and the largest it takes).
    static let blueZDefault = 517

    /// The event log's line for the bluetoothd `configuration` of this run (nil: it could not be read).
    static func note(_ configuration: BluetoothdConfiguration?) -> String {
        guard let configuration else {
            return "firmware: could not read bluetoothd's main.conf: if its [GATT] ExchangeMTU is above \(largestSafeMTU) "
                + "(BlueZ's default is \(blueZDefault)), clients that write SMP frames in MTU − 3 byte pieces (smpmgr, "
                + "smpclient, Android apps) send writes over 512 bytes, which bluetoothd drops, and their upload stalls "
                + "(docs/firmware.md)"
        }
        let set = configuration.integer(section: "GATT", key: "ExchangeMTU", valid: 23...blueZDefault)
        let mtu = set ?? blueZDefault
        let source =
            set == nil
            ? "[GATT] ExchangeMTU not set in \(configuration.file): BlueZ's default" : "[GATT] ExchangeMTU in \(configuration.file)"
        if mtu <= largestSafeMTU {
            return "firmware: bluetoothd offers ATT MTU \(mtu) at most (\(source)): SMP write pieces of MTU − 3 bytes fit "
                + "the 512 bytes bluetoothd takes"
        }
        return "firmware: bluetoothd offers ATT MTU \(mtu) (\(source)): clients that write SMP frames in MTU − 3 byte "
            + "pieces (smpmgr, smpclient, Android apps) send \(mtu - 3)-byte writes, which bluetoothd drops (over the "
            + "512-byte value limit), and their upload stalls; set ExchangeMTU = \(largestSafeMTU) in [GATT] there and "
            + "restart bluetoothd (docs/firmware.md)"
    }
}
