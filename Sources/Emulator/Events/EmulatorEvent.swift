import Foundation
import Profile

/// One entry of the event log: something that happened between gattemu, bluetoothd and a central.
public struct EmulatorEvent: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case started, stopped, advertising, advertisingStopped = "advertising-stopped", advertisementChanged = "advertisement-changed"
        case connected, disconnected, mtu, subscribed, unsubscribed
        case read, write, answer, notify, indicate, confirmed
        case rule, fault, note, error, bluetoothdLost = "bluetoothd-lost", bluetoothdBack = "bluetoothd-back"
    }

    /// Position in the log, from 1; assigned by `EventLog` (0 until recorded).
    public var sequence: Int
    /// Milliseconds since gattemu started (monotonic clock).
    public var time: Double
    public var kind: Kind
    public var central: String?
    public var characteristic: String?
    public var value: [UInt8]?
    public var detail: String?

    public init(sequence: Int = 0, time: Double, kind: Kind, central: String? = nil, characteristic: String? = nil, value: [UInt8]? = nil, detail: String? = nil) {
        self.sequence = sequence
        self.time = time
        self.kind = kind
        self.central = central
        self.characteristic = characteristic
        self.value = value
        self.detail = detail
    }

    /// `  1234.567 ms write        AA:BB:… rx 0102… (request)`
    public var text: String {
        var line = Self.milliseconds(time)
        line.reserveCapacity(80 + (value?.count ?? 0) * 2 + (detail?.utf8.count ?? 0))
        line += " ms "
        line += kind.rawValue
        let width = kind.rawValue.utf8.count
        if width < 12 { line += String(repeating: " ", count: 12 - width) }
        if let central { line += " "; line += central }
        if let characteristic { line += " "; line += characteristic }
        if let value { line += " "; line += value.isEmpty ? "(empty)" : value.hexString(uppercase: false) }
        if let detail { line += " "; line += detail }
        return line
    }

    /// One JSON object with sorted keys, for JSON-lines logs.
    public var json: String {
        var members: [String] = []
        if let central { members.append("\"central\":" + JSONText.quoted(central)) }
        if let characteristic { members.append("\"characteristic\":" + JSONText.quoted(characteristic)) }
        if let detail { members.append("\"detail\":" + JSONText.quoted(detail)) }
        members.append("\"event\":" + JSONText.quoted(kind.rawValue))
        members.append("\"seq\":\(sequence)")
        members.append("\"t\":\((time * 1000).rounded() / 1000)")
        if let value { members.append("\"value\":\"" + value.hexString(uppercase: false) + "\"") }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// `time` with three decimals, right-aligned in ten characters.
    static func milliseconds(_ time: Double) -> String {
        let thousandths = Int((time * 1000).rounded())
        let fraction = thousandths % 1000
        let text = String(thousandths / 1000) + (fraction < 10 ? ".00" : fraction < 100 ? ".0" : ".") + String(fraction)
        let width = text.utf8.count
        return width < 10 ? String(repeating: " ", count: 10 - width) + text : text
    }
}
