import Control
import Profile

/// Text renderings of control API answers for `gattemu ctl`.
enum CtlFormat {
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

    /// `   12   1234.567 ms  write  AA:BB:… rx 0102 detail` from one event's JSON text.
    static func event(_ line: String) -> String {
        guard let object = try? JSONParser.parse(line, file: "event"), case .object = object.value else { return line }
        return event(object)
    }

    /// `   12   1234.567 ms  write  AA:BB:… rx 0102 detail` from one event.
    static func event(_ object: JSONNode) -> String {
        var parts = [padded(String(object["seq"]?.intValue ?? 0), to: 5, left: true) + " "
                     + padded(fixed(object["t"]?.doubleValue ?? 0, decimals: 3), to: 10, left: true) + " ms"]
        parts.append(padded(object["event"]?.stringValue ?? "?", to: 12))
        for key in ["central", "characteristic", "value", "detail"] {
            if let text = object[key]?.stringValue { parts.append(text.isEmpty && key == "value" ? "(empty)" : text) }
        }
        return parts.joined(separator: " ")
    }

    static func fault(_ fault: JSONNode) -> String {
        var text = "\(fault["id"]?.stringValue ?? "?"): on \(fault["on"]?.stringValue ?? "?")"
        if let characteristic = fault["characteristic"]?.stringValue { text += " \(characteristic)" }
        if let central = fault["central"]?.stringValue { text += " from \(central)" }
        text += " → \(fault["summary"]?.stringValue ?? "?")"
        var scope: [String] = []
        if let nth = fault["nth"]?.intValue, nth > 1 { scope.append("from #\(nth)") }
        if let count = fault["count"]?.intValue { scope.append("×\(count)") }
        if let probability = fault["probability"]?.doubleValue, probability < 1 { scope.append("p=\(probability)") }
        if let seed = fault["seed"] { scope.append("seed \(JSONAny(seed).text)") }
        if !scope.isEmpty { text += " [" + scope.joined(separator: ", ") + "]" }
        text += " — matched \(fault["matched"]?.intValue ?? 0), fired \(fault["fired"]?.intValue ?? 0)"
        if fault["exhausted"]?.boolValue == true { text += " (done)" }
        return text
    }

    static func status(_ status: JSONNode) -> String {
        var lines: [String] = ["profile     \(status["profile"]?.stringValue ?? "?")"]
        if let adapter = status["adapter"], case .object = adapter.value {
            lines.append("adapter     \(adapter["name"]?.stringValue ?? "?") \(adapter["address"]?.stringValue ?? "") \"\(adapter["alias"]?.stringValue ?? "")\"")
        } else {
            lines.append("adapter     (none)")
        }
        if let advertising = status["advertising"], case .object = advertising.value {
            let on = advertising["advertised"]?.boolValue == true ? "on" : "off"
            lines.append("advertising \(on), variant \(advertising["variant"]?.stringValue ?? "(base)")")
            for advertisement in advertising["advertisements"]?.arrayItems ?? [] {
                lines.append("            \(advertisement.stringValue ?? "?")")
            }
        }
        let centrals = status["centrals"]?.arrayItems ?? []
        lines.append("centrals    \(centrals.isEmpty ? "none" : "")")
        for central in centrals {
            var line = "  \(central["address"]?.stringValue ?? "?")"
            if let mtu = central["mtu"]?.intValue { line += " mtu \(mtu)" }
            let subscriptions = (central["subscriptions"]?.arrayItems ?? []).compactMap(\.stringValue)
            if !subscriptions.isEmpty { line += " subscribed to " + subscriptions.joined(separator: ", ") }
            lines.append(line)
        }
        for key in ["state", "variables"] {
            guard case .object(let members)? = status[key]?.value, !members.isEmpty else { continue }
            let pairs = members.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.stringValue ?? JSONAny($0.value).text)" }
            lines.append(padded(key, to: 12) + pairs.joined(separator: " "))
        }
        let faults = status["faults"]?.arrayItems ?? []
        lines.append("faults      \(faults.isEmpty ? "none" : "")")
        lines += faults.map { "  " + fault($0) }
        return lines.joined(separator: "\n")
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
