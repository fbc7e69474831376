import Profile

extension FaultAction {
    /// A short text for the event log and listings, e.g. `error not-authorized`, `delay 100–300 ms`.
    public var summary: String {
        switch self {
        case .delay(let min, let max): min == max ? "delay \(min) ms" : "delay \(min)–\(max) ms"
        case .drop: "drop"
        case .error(let error): "error \(error)"
        case .corrupt(.flipBits(let n)): "corrupt: flip \(n) bit\(n == 1 ? "" : "s")"
        case .corrupt(.replace(let at, let bytes)): "corrupt: bytes at \(at) := \(bytes.hexString())"
        case .corrupt(.xor(let at, let mask)): "corrupt: bytes at \(at) ^= \(mask.hexString())"
        case .truncate(let n): "truncate to \(n) byte\(n == 1 ? "" : "s")"
        case .rewrite(let match, let replace, let all):
            "rewrite \(all ? "every" : "the first") \(match.hexString(separator: " ")) → \(replace.isEmpty ? "(nothing)" : replace.hexString(separator: " "))"
        case .duplicate(let copies): copies == 1 ? "duplicate" : "duplicate ×\(copies)"
        case .reorder: "reorder"
        case .disconnect: "disconnect"
        case .silence(let ms): "stop advertising for \(ms) ms"
        case .advertise(let variant): "advertise \(variant ?? "(base)")"
        case .powerCycle(let ms): "power-cycle the adapter (\(ms) ms off)"
        case .refuse(let refusal): refusal.map { "refuse with \($0.text)" } ?? "refuse"
        case .wrongPasskey: "answer the pairing with a wrong passkey"
        case .forgetBonds: "forget every paired central's keys"
        case .smpError(let code): "refuse with SMP error \(code)"
        case .wrongHash: "keep the uploaded image with a wrong hash"
        case .losePending: "lose the pending image at the reset"
        case .closeChannel: "close the channel"
        }
    }
}

extension FiredFault {
    /// `f2 error not-authorized (write #3)`.
    public var detail: String {
        var text = "\(id) \(action.summary)"
        if let delayMilliseconds, case .delay(let min, let max) = action, min != max { text += " → \(delayMilliseconds) ms" }
        text += operation.kind == .start ? "" : " (\(operation.kind.rawValue) #\(occurrence))"
        return text
    }
}
