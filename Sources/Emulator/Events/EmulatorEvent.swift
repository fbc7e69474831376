import Foundation

/// One entry of the event log: something that happened between gattemu, bluetoothd and a central.
public struct EmulatorEvent: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case started, stopped, advertising, advertisingStopped = "advertising-stopped", advertisementChanged = "advertisement-changed"
        case connected, disconnected, subscribed, unsubscribed
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

    /// `  1234.567 ms  write      AA:BB:… rx 0102… (request)`
    public var text: String {
        var parts = [String(format: "%10.3f ms", time), kind.rawValue.padding(toLength: max(12, kind.rawValue.count), withPad: " ", startingAt: 0)]
        if let central { parts.append(central) }
        if let characteristic { parts.append(characteristic) }
        if let value { parts.append(value.isEmpty ? "(empty)" : value.map { String(format: "%02x", $0) }.joined()) }
        if let detail { parts.append(detail) }
        return parts.joined(separator: " ")
    }

    /// One JSON object, for JSON-lines logs.
    public var json: String {
        var object: [String: Any] = ["seq": sequence, "t": (time * 1000).rounded() / 1000, "event": kind.rawValue]
        if let central { object["central"] = central }
        if let characteristic { object["characteristic"] = characteristic }
        if let value { object["value"] = value.map { String(format: "%02x", $0) }.joined() }
        if let detail { object["detail"] = detail }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
