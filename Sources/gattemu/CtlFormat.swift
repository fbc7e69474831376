import Control
import ControlContract
import Profile
import TextEscaping

/// Text renderings of control API answers for `gattemu ctl`; what the server sent (event fields, names, values
/// from centrals and profiles) is escaped for the terminal (``TerminalText``), line by line.
enum CtlFormat {
    /// The server's JSON as printed by `--json`: the same JSON, with terminal controls as `\u` escapes.
    static func json(_ json: String) -> String { TerminalText.escapedJSON(json) }

    /// Text made of the server's words, of one or more lines, escaped for the terminal.
    static func text(_ text: String) -> String { TerminalText.escapedLines(text) }

    /// `segment` percent-encoded for one URL path segment (unreserved characters and `:@!$&'()*+,;=` stay).
    static func escape(_ segment: String) -> String {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:@!$&'()*+,;=".utf8)
        let digits = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        for byte in segment.utf8 {
            if allowed.contains(byte) {
                bytes.append(byte)
            } else {
                bytes += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `   12   1234.567 ms  write  AA:BB:… rx 0102 detail` from one event.
    static func event(_ event: Event) -> String {
        var parts = [padded(String(event.seq), to: 5, left: true) + " " + padded(fixed(event.t, decimals: 3), to: 10, left: true) + " ms"]
        if let device = event.device { parts.append("[\(device)]") }
        parts.append(padded(event.event.rawValue, to: 12))
        if let central = event.central { parts.append(central) }
        if let characteristic = event.characteristic { parts.append(characteristic) }
        if let value = event.value { parts.append(value.isEmpty ? "(empty)" : value) }
        if let detail = event.detail { parts.append(detail) }
        return TerminalText.escaped(parts.joined(separator: " "))
    }

    /// `lock  running  hci1 00:AA:01:01:00:01  profiles/noke-lock.json`, one line per device.
    static func devices(_ list: DeviceList) -> String {
        let width = list.devices.map(\.id.count).max() ?? 0
        return list.devices.map { device in
            var line = padded(device.id, to: width) + "  " + padded(device.state.rawValue, to: 8)
            line += " " + (device.adapterName ?? device.adapter ?? "first adapter")
            if let address = device.address { line += " " + address }
            line += "  " + device.profile
            if let reason = device.reason { line += " — " + reason }
            return TerminalText.escaped(line)
        }.joined(separator: "\n")
    }

    static func fault(_ fault: Fault) -> String {
        var text = "\(fault.id): on \(fault.on.rawValue)"
        if let characteristic = fault.characteristic { text += " \(characteristic)" }
        if let channel = fault.channel { text += " channel \(channel)" }
        if let central = fault.central { text += " from \(central)" }
        text += " → \(fault.summary)"
        var scope: [String] = []
        if fault.nth > 1 { scope.append("from #\(fault.nth)") }
        if let count = fault.count { scope.append("×\(count)") }
        if fault.probability < 1 { scope.append("p=\(fault.probability)") }
        if let seed = fault.seed { scope.append("seed \(seed)") }
        if !scope.isEmpty { text += " [" + scope.joined(separator: ", ") + "]" }
        text += " — matched \(fault.matched), fired \(fault.fired)"
        if fault.exhausted { text += " (done)" }
        return TerminalText.escaped(text)
    }

    static func status(_ status: Status) -> String {
        var lines: [String] = ["profile     \(status.profile)"]
        if let adapter = status.adapter {
            lines.append("adapter     \(adapter.name) \(adapter.address) \"\(adapter.alias ?? "")\"")
        } else {
            lines.append("adapter     (none)")
        }
        lines.append("advertising \(status.advertising.advertised ? "on" : "off"), variant \(status.advertising.variant ?? "(base)")")
        for advertisement in status.advertising.advertisements { lines.append("            \(advertisement)") }
        lines.append("centrals    \(status.centrals.isEmpty ? "none" : "")")
        for central in status.centrals {
            var line = "  \(central.address)"
            if let mtu = central.mtu { line += " mtu \(mtu)" }
            if !central.subscriptions.isEmpty { line += " subscribed to " + central.subscriptions.joined(separator: ", ") }
            lines.append(line)
        }
        for (key, members) in [("state", status.state), ("variables", status.variables)] where !members.isEmpty {
            let pairs = members.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            lines.append(padded(key, to: 12) + pairs.joined(separator: " "))
        }
        lines.append("faults      \(status.faults.isEmpty ? "none" : "")")
        lines += status.faults.map { "  " + fault($0) }
        // Each line escaped on its own: a line feed in a name is written out, not a line of its own.
        return lines.map(TerminalText.escaped).joined(separator: "\n")
    }

    static func firmware(_ firmware: FirmwareStatus) -> String {
        var lines: [String] = []
        for slot in firmware.slots {
            let flags = [
                ("active", slot.active), ("confirmed", slot.confirmed), ("pending", slot.pending), ("permanent", slot.permanent),
                ("bootable", slot.bootable),
            ].filter(\.1).map(\.0)
            var line = "slot \(slot.slot)  \(slot.version)  \(flags.isEmpty ? "-" : flags.joined(separator: ", "))"
            if let size = slot.size { line += "  \(size) bytes" }
            lines.append(line)
            lines.append("        sha256 \(slot.hash)")
        }
        if firmware.slots.isEmpty { lines.append("slots   none") }
        if let upload = firmware.upload {
            let percent = upload.length > 0 ? upload.offset * 100 / upload.length : 0
            lines.append(
                "upload  \(upload.offset) of \(upload.length) bytes (\(percent) %)"
                    + (upload.central.map { " from \($0)" } ?? ", its central gone: resumable"))
        } else {
            lines.append("upload  none")
        }
        if firmware.rebooting { lines.append("rebooting") }
        lines.append("SMP     buffer \(firmware.bufferSize) bytes × \(firmware.bufferCount); slot size \(firmware.slotSize) bytes")
        return lines.map(TerminalText.escaped).joined(separator: "\n")
    }

    /// `text` padded with spaces to `width` characters (on the left when `left`); longer text is kept whole.
    static func padded(_ text: String, to width: Int, left: Bool = false) -> String {
        let padding = String(repeating: " ", count: max(0, width - text.count))
        return left ? padding + text : text + padding
    }

    /// `value` with exactly `decimals` digits after the point (`1234.5` → `1234.500`).
    static func fixed(_ value: Double, decimals: Int) -> String {
        guard value.isFinite else { return String(value) }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9e18 else { return String(value) }
        let units = UInt64(scaled)
        let whole = units / UInt64(scale)
        let fraction = String(units % UInt64(scale))
        let sign = value < 0 && units > 0 ? "-" : ""
        guard decimals > 0 else { return sign + String(whole) }
        return sign + String(whole) + "." + String(repeating: "0", count: decimals - fraction.count) + fraction
    }
}
