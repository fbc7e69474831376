import Bluetooth
import FoundationEssentials
import Profile
import TextEscaping

/// One entry of the event log: something that happened between gattemu, bluetoothd and a central.
public struct EmulatorEvent: Sendable, Equatable {
    /// What the event is about (`event` in the JSON).
    public typealias Kind = EmulatorEventKind

    /// Position in the log, from 1; assigned by `EventLog` (0 until recorded).
    public var sequence: Int
    /// Milliseconds since gattemu started (monotonic clock).
    public var time: Double
    public var kind: Kind
    public var central: BluetoothAddress?
    public var characteristic: String?
    public var value: [UInt8]?
    public var detail: String?
    /// The ATT MTU of the central's link for a GATT operation, when known (JSON only: text lines have `mtu` events).
    public var mtu: Int?

    public init(
        sequence: Int = 0, time: Double, kind: Kind, central: BluetoothAddress? = nil, characteristic: String? = nil, value: [UInt8]? = nil,
        detail: String? = nil, mtu: Int? = nil
    ) {
        self.sequence = sequence
        self.time = time
        self.kind = kind
        self.central = central
        self.characteristic = characteristic
        self.value = value
        self.detail = detail
        self.mtu = mtu
    }

    /// `  1234.567 ms write        AA:BB:… rx 0102… (request)`
    public var text: String {
        var line: [UInt8] = []
        appendText(to: &line)
        return String(decoding: line, as: UTF8.self)
    }

    /// Appends ``text`` as UTF-8 to `line` (no intermediate strings: the log formats every event).
    public func appendText(to line: inout [UInt8]) {
        // Lines are appended to a batch that grows until it is written: reserve geometrically, since an
        // exact reservation per line would copy the whole batch for every line.
        let needed = line.count + 80 + (value?.count ?? 0) * 2 + (detail?.utf8.count ?? 0)
        if line.capacity < needed { line.reserveCapacity(max(needed, line.capacity * 2)) }
        Self.appendMilliseconds(time, to: &line)
        line += " ms ".utf8
        line += kind.rawValue.utf8
        let width = kind.rawValue.utf8.count
        if width < 12 { line += repeatElement(UInt8(ascii: " "), count: 12 - width) }
        if let central {
            line.append(UInt8(ascii: " "))
            Self.appendEscaped(central.description, to: &line)
        }
        if let characteristic {
            line.append(UInt8(ascii: " "))
            Self.appendEscaped(characteristic, to: &line)
        }
        if let value {
            line.append(UInt8(ascii: " "))
            if value.isEmpty { line += "(empty)".utf8 } else { value.appendHex(to: &line, uppercase: false) }
        }
        if let detail {
            line.append(UInt8(ascii: " "))
            Self.appendEscaped(detail, to: &line)
        }
    }

    /// Appends `text` with terminal control characters written out (``TerminalText/escaped(_:)``): text from
    /// profiles and centrals must not move the cursor, retitle the window or hide lines of a terminal.
    static func appendEscaped(_ text: String, to line: inout [UInt8]) {
        line += TerminalText.escaped(text).utf8
    }

    /// One JSON object with sorted keys, for JSON-lines logs.
    public var json: String {
        var members: [String] = []
        if let central { members.append("\"central\":\"\(central)\"") }
        if let characteristic { members.append("\"characteristic\":" + JSONText.quoted(characteristic)) }
        if let detail { members.append("\"detail\":" + JSONText.quoted(detail)) }
        members.append("\"event\":" + JSONText.quoted(kind.rawValue))
        if let mtu { members.append("\"mtu\":\(mtu)") }
        members.append("\"seq\":\(sequence)")
        members.append("\"t\":\((time * 1000).rounded() / 1000)")
        if let value { members.append("\"value\":\"" + value.hexString(uppercase: false) + "\"") }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// Appends `time` with three decimals, right-aligned in ten characters.
    static func appendMilliseconds(_ time: Double, to line: inout [UInt8]) {
        var rest = max(0, Int((time * 1000).rounded()))
        var digits = 1
        var power = 10
        while power <= rest, digits < 19 {
            digits += 1
            power &*= 10
        }
        // At least "0.000"; the integer part's digits, the point, three decimals.
        let width = max(digits, 4) + 1
        line.append(contentsOf: repeatElement(UInt8(ascii: " "), count: max(width, 10)))
        line.withUnsafeMutableBufferPointer { buffer in
            var index = buffer.count - 1
            for position in 0..<(width - 1) {
                buffer[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                index -= 1
                if position == 2 {
                    buffer[index] = UInt8(ascii: ".")
                    index -= 1
                }
            }
        }
    }
}
