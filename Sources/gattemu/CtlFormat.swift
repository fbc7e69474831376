import Foundation

/// Text renderings of control API answers for `gattemu ctl`.
enum CtlFormat {
    static func escape(_ segment: String) -> String {
        segment.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? segment
    }

    /// `   12   1234.567 ms  write  AA:BB:… rx 0102 detail` from one event's JSON.
    static func event(_ line: String) -> String {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else { return line }
        var parts = [String(format: "%5d %10.3f ms", object["seq"] as? Int ?? 0, object["t"] as? Double ?? 0)]
        let kind = object["event"] as? String ?? "?"
        parts.append(kind.padding(toLength: max(12, kind.count), withPad: " ", startingAt: 0))
        for key in ["central", "characteristic", "value", "detail"] {
            if let text = object[key] as? String { parts.append(text.isEmpty && key == "value" ? "(empty)" : text) }
        }
        return parts.joined(separator: " ")
    }

    static func fault(_ fault: [String: Any]) -> String {
        var text = "\(fault["id"] as? String ?? "?"): on \(fault["on"] as? String ?? "?")"
        if let characteristic = fault["characteristic"] as? String { text += " \(characteristic)" }
        if let central = fault["central"] as? String { text += " from \(central)" }
        text += " → \(fault["summary"] as? String ?? "?")"
        var scope: [String] = []
        if let nth = fault["nth"] as? Int, nth > 1 { scope.append("from #\(nth)") }
        if let count = fault["count"] as? Int { scope.append("×\(count)") }
        if let probability = fault["probability"] as? Double, probability < 1 { scope.append("p=\(probability)") }
        if let seed = fault["seed"] as? Int { scope.append("seed \(seed)") }
        if !scope.isEmpty { text += " [" + scope.joined(separator: ", ") + "]" }
        text += " — matched \(fault["matched"] as? Int ?? 0), fired \(fault["fired"] as? Int ?? 0)"
        if fault["exhausted"] as? Bool == true { text += " (done)" }
        return text
    }

    static func status(_ status: [String: Any]) -> String {
        var lines: [String] = ["profile     \(status["profile"] as? String ?? "?")"]
        if let adapter = status["adapter"] as? [String: Any] {
            lines.append("adapter     \(adapter["name"] as? String ?? "?") \(adapter["address"] as? String ?? "") \"\(adapter["alias"] as? String ?? "")\"")
        } else {
            lines.append("adapter     (none)")
        }
        if let advertising = status["advertising"] as? [String: Any] {
            let on = advertising["advertised"] as? Bool == true ? "on" : "off"
            lines.append("advertising \(on), variant \(advertising["variant"] as? String ?? "(base)")")
            for advertisement in advertising["advertisements"] as? [String] ?? [] { lines.append("            \(advertisement)") }
        }
        let centrals = status["centrals"] as? [[String: Any]] ?? []
        lines.append("centrals    \(centrals.isEmpty ? "none" : "")")
        for central in centrals {
            var line = "  \(central["address"] as? String ?? "?")"
            if let mtu = central["mtu"] as? Int { line += " mtu \(mtu)" }
            let subscriptions = central["subscriptions"] as? [String] ?? []
            if !subscriptions.isEmpty { line += " subscribed to " + subscriptions.joined(separator: ", ") }
            lines.append(line)
        }
        for key in ["state", "variables"] {
            let values = status[key] as? [String: String] ?? [:]
            if !values.isEmpty { lines.append(key.padding(toLength: 12, withPad: " ", startingAt: 0) + values.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")) }
        }
        let faults = status["faults"] as? [[String: Any]] ?? []
        lines.append("faults      \(faults.isEmpty ? "none" : "")")
        lines += faults.map { "  " + fault($0) }
        return lines.joined(separator: "\n")
    }
}
