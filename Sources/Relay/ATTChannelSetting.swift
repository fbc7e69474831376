import BlueZ
import DBus

#if canImport(Glibc)
    import Glibc
#endif

/// How many ATT bearers bluetoothd opens per LE link (`[GATT] Channels` of the main.conf it was started with; more
/// than one is Enhanced ATT). bluetoothd spreads a central's write commands over them, and ATT orders nothing across
/// bearers: a device that offers EATT can receive the relay's write commands out of order (docs/relay.md).
public struct ATTChannelSetting: Sendable, Equatable {
    /// At most this many ATT bearers per link.
    public var channels: Int
    /// The main.conf it comes from.
    public var file: String

    /// bluetoothd's value when main.conf does not set it (BlueZ 5.66 and later).
    public static let bluetoothdDefault = 3
    /// Where bluetoothd reads main.conf unless started with `-f FILE`.
    public static let defaultFile = "/etc/bluetooth/main.conf"
    /// The most bytes read of a command line or a main.conf.
    static let maximumBytes = 256 * 1024

    /// Whether write commands may reach a device out of order.
    public var mayReorder: Bool { channels > 1 }

    /// The setting of the bluetoothd `stack` talks to: its process found by its bus name, its main.conf by its command
    /// line. Nil when it cannot be told (bluetoothd in another PID namespace, a file this user may not read).
    public static func of(_ stack: BlueZStack) async -> ATTChannelSetting? {
        guard let name = stack.bluetoothdName,
            let reply = try? await stack.connection.call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "GetConnectionUnixProcessID", arguments: [.string(name)], timeout: .seconds(5)),
            let pid = reply.first?.integer, pid > 0, pid <= Int(Int32.max),
            let commandLine = read("/proc/\(pid)/cmdline")
        else { return nil }
        let file = configFile(commandLine: commandLine)
        guard let text = read(file) else { return nil }
        return ATTChannelSetting(channels: channels(mainConf: String(decoding: text, as: UTF8.self)), file: file)
    }

    /// The main.conf named by a `/proc/PID/cmdline` (arguments separated by NUL): `-f FILE`, `-fFILE`,
    /// `--configfile FILE` or `--configfile=FILE`; else ``defaultFile``.
    static func configFile(commandLine: [UInt8]) -> String {
        let arguments = commandLine.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        var file = defaultFile
        var index = 1
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "-f" || argument == "--configfile", index + 1 < arguments.count {
                file = arguments[index + 1]
                index += 1
            } else if argument.hasPrefix("--configfile=") {
                file = String(argument.dropFirst("--configfile=".count))
            } else if argument.hasPrefix("-f"), argument.count > 2, !argument.hasPrefix("--") {
                file = String(argument.dropFirst(2))
            }
            index += 1
        }
        return file
    }

    /// `Channels` of main.conf's `[GATT]` section as bluetoothd reads it (a key file: `#` comments, `key = value`),
    /// ``bluetoothdDefault`` when absent or not a number, clamped to bluetoothd's 1...5.
    static func channels(mainConf text: String) -> Int {
        var section = ""
        var value: Int?
        // Lines split by byte: "\r\n" is one Character, and a key file's line ends are bytes.
        for bytes in Array(text.utf8).split(whereSeparator: { $0 == 0x0A || $0 == 0x0D }) {
            let line = Self.trimmed(Substring(String(decoding: bytes, as: UTF8.self)))
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                section = String(line.dropFirst().dropLast())
                continue
            }
            guard section == "GATT", let equals = line.firstIndex(of: "=") else { continue }
            let key = Self.trimmed(line[..<equals])
            guard key == "Channels" else { continue }
            value = Int(Self.trimmed(line[line.index(after: equals)...]))
        }
        return min(max(value ?? bluetoothdDefault, 1), 5)
    }

    /// `text` without the spaces and tabs around it.
    static func trimmed(_ text: Substring) -> Substring {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = text.firstIndex(where: { !blank($0) }), let last = text.lastIndex(where: { !blank($0) }) else { return "" }
        return text[first...last]
    }

    /// The first ``maximumBytes`` of a file, nil when it cannot be opened.
    static func read(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while bytes.count < maximumBytes {
            let count = Glibc.read(descriptor, &buffer, min(buffer.count, maximumBytes - bytes.count))
            if count <= 0 { break }
            bytes += buffer.prefix(count)
        }
        return bytes
    }

    /// The event log's line about it.
    public var note: String {
        mayReorder
            ? "relay: bluetoothd opens up to \(channels) ATT channels per link ([GATT] Channels in \(file)): with a device that "
                + "offers Enhanced ATT, the relay's write commands can reach it out of order; set Channels = 1 there and restart "
                + "bluetoothd (docs/relay.md, \"EATT\")"
            : "relay: bluetoothd opens one ATT channel per link ([GATT] Channels = 1 in \(file)): write commands reach the "
                + "device in order"
    }
}
