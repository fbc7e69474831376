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
    /// The attribute as the log names it: a ``CharacteristicID``'s text, or `characteristic/descriptor` for one of
    /// its descriptors (``GattAttributeID/description``).
    public var characteristic: String?
    public var value: [UInt8]?
    public var detail: String?
    /// The ATT MTU of the central's link for a GATT operation, when known (JSON only: text lines have `mtu` events).
    public var mtu: Int?
    /// The rig's device the event is of (`gattemu run A@hci0 B@hci1`); nil when the process runs one device.
    public var device: String?
    /// How far a firmware upload is, on the `firmware` event of each chunk.
    public var progress: Progress?

    /// Bytes of a firmware image received (`done`) of its length (`total`).
    public struct Progress: Sendable, Equatable {
        public var done: Int
        public var total: Int

        public init(done: Int, total: Int) {
            self.done = done
            self.total = total
        }
    }

    public init(
        sequence: Int = 0, time: Double, kind: Kind, central: BluetoothAddress? = nil, characteristic: String? = nil, value: [UInt8]? = nil,
        detail: String? = nil, mtu: Int? = nil, device: String? = nil, progress: Progress? = nil
    ) {
        self.sequence = sequence
        self.device = device
        self.progress = progress
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
        reserveRoom(in: &line)
        Self.appendMilliseconds(time, to: &line)
        line += " ms ".utf8
        if let device {
            line.append(UInt8(ascii: "["))
            Self.appendEscaped(device, to: &line)
            line += "] ".utf8
        }
        line += kind.rawValue.utf8
        let width = kind.rawValue.utf8.count
        if width < 12 { line += repeatElement(UInt8(ascii: " "), count: 12 - width) }
        if let central {
            line.append(UInt8(ascii: " "))
            central.appendDescription(to: &line)  // hex digits and colons: nothing to escape
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

    /// Room in `line` for one more line of this event, text or JSON. Lines are appended to a batch that grows until
    /// it is written: reserved geometrically, since an exact reservation per line would copy the whole batch for
    /// every line.
    private func reserveRoom(in line: inout [UInt8]) {
        let needed =
            line.count + 120 + (value?.count ?? 0) * 2 + (detail?.utf8.count ?? 0) + (characteristic?.utf8.count ?? 0)
            + (device?.utf8.count ?? 0)
        if line.capacity < needed { line.reserveCapacity(max(needed, line.capacity * 2)) }
    }

    /// One JSON object with sorted keys, for JSON-lines logs.
    public var json: String {
        var line: [UInt8] = []
        appendJSON(to: &line)
        return String(decoding: line, as: UTF8.self)
    }

    /// Appends ``json`` as UTF-8 to `line` (no intermediate strings: the events file has every event).
    public func appendJSON(to line: inout [UInt8]) {
        reserveRoom(in: &line)
        var first = true
        func key(_ name: StaticString) {
            line += first ? #"{""#.utf8 : #",""#.utf8
            first = false
            name.withUTF8Buffer { line += $0 }
            line += #"":"#.utf8
        }
        if let central {
            key("central")
            line.append(UInt8(ascii: "\""))
            central.appendDescription(to: &line)
            line.append(UInt8(ascii: "\""))
        }
        if let characteristic {
            key("characteristic")
            JSONText.appendQuoted(characteristic, to: &line)
        }
        if let detail {
            key("detail")
            JSONText.appendQuoted(detail, to: &line)
        }
        if let device {
            key("device")
            JSONText.appendQuoted(device, to: &line)
        }
        key("event")
        JSONText.appendQuoted(kind.rawValue, to: &line)
        if let mtu {
            key("mtu")
            line += String(mtu).utf8
        }
        if let progress {
            key("progress")
            line += "{\"done\":\(progress.done),\"total\":\(progress.total)}".utf8
        }
        key("seq")
        line += String(sequence).utf8
        key("t")
        Self.appendJSONMilliseconds(time, to: &line)
        if let value {
            key("value")
            line.append(UInt8(ascii: "\""))
            value.appendHex(to: &line, uppercase: false)
            line.append(UInt8(ascii: "\""))
        }
        line.append(UInt8(ascii: "}"))
    }

    /// `time` rounded to three decimals as Swift prints that `Double` (`1234.567`, `1234.5`, `1234.0`), without
    /// formatting a `Double`: the digits of the whole thousandths.
    static func appendJSONMilliseconds(_ time: Double, to line: inout [UInt8]) {
        let rounded = (time * 1000).rounded()
        // Past 2^53 thousandths (285 years) a Double no longer holds every thousandth: printed as Swift prints it.
        guard rounded.isFinite, abs(rounded) < 9_007_199_254_740_992 else {
            line += "\(rounded / 1000)".utf8
            return
        }
        if rounded.sign == .minus { line.append(UInt8(ascii: "-")) }
        let magnitude = UInt(rounded.magnitude)
        line += String(magnitude / 1000).utf8
        line.append(UInt8(ascii: "."))
        let fraction = magnitude % 1000
        line.append(UInt8(ascii: "0") + UInt8(fraction / 100))
        line.append(UInt8(ascii: "0") + UInt8(fraction / 10 % 10))
        line.append(UInt8(ascii: "0") + UInt8(fraction % 10))
        // Trailing zeros go, but the one right after the point (`1234.0`).
        while line.last == UInt8(ascii: "0"), line[line.count - 2] != UInt8(ascii: ".") { line.removeLast() }
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
