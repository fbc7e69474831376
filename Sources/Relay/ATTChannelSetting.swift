import BlueZ
import DBus
import Lexical

#if canImport(Glibc)
    import Glibc
#endif

/// How many ATT bearers bluetoothd opens per LE link (`[GATT] Channels` of the main.conf it was started with; more
/// than one is Enhanced ATT). bluetoothd spreads a central's write commands over them, and ATT orders nothing across
/// bearers: a device that offers EATT can receive the relay's write commands out of order (docs/relay.md).
public struct ATTChannelSetting: Sendable, Equatable {
    /// At most this many ATT bearers per link; nil when main.conf sets no valid value, and bluetoothd's version decides
    /// (3 up to BlueZ 5.66, 1 from 5.67 on).
    public var channels: Int?
    /// The main.conf it comes from, as bluetoothd's command line names it.
    public var file: String

    /// Where bluetoothd reads main.conf unless started with `-f FILE`.
    public static let defaultFile = "/etc/bluetooth/main.conf"
    /// The values bluetoothd takes (BlueZ 5.66 clamps others into it; later versions ignore them).
    static let valid = 1...5
    /// The most bytes read of a command line or a main.conf.
    static let maximumBytes = 256 * 1024

    /// Whether write commands may reach a device out of order (also when bluetoothd's version decides).
    public var mayReorder: Bool { (channels ?? 3) > 1 }

    /// The setting of the bluetoothd `stack` talks to: its process found by its bus name (and checked to be
    /// bluetoothd), its main.conf by its command line. Nil when it cannot be told (bluetoothd in another PID
    /// namespace, a file this user may not read).
    public static func of(_ stack: BlueZStack) async -> ATTChannelSetting? {
        guard let name = stack.bluetoothdName,
            let reply = try? await stack.connection.call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "GetConnectionUnixProcessID", arguments: [.string(name)], timeout: .seconds(5)),
            let pid = reply.first?.integer, pid > 0, pid <= Int(Int32.max),
            let commandLine = read("/proc/\(pid)/cmdline"),
            let file = configFile(commandLine: commandLine)
        else { return nil }
        // A relative -f is bluetoothd's working directory's.
        guard let text = read(file.hasPrefix("/") ? file : "/proc/\(pid)/cwd/\(file)") else { return nil }
        return ATTChannelSetting(channels: channels(mainConf: text), file: file)
    }

    /// The main.conf named by a `/proc/PID/cmdline` (arguments separated by NUL) of bluetoothd: `-f FILE`, `-fFILE`,
    /// `--configfile FILE` or `--configfile=FILE`; else ``defaultFile``. Nil when the program is not bluetoothd (a
    /// process number read in another PID namespace names another process).
    static func configFile(commandLine: [UInt8]) -> String? {
        let arguments = commandLine.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        guard let program = arguments.first, program.split(separator: "/").last == "bluetoothd" else { return nil }
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

    /// `Channels` of main.conf's `[GATT]` section (a key file: `#` comments, `key = value`), the last one set, as a
    /// decimal or `0x` number in ``valid``; nil when absent or anything else, where bluetoothd versions differ.
    static func channels(mainConf text: [UInt8]) -> Int? {
        var section = ""
        var value: Int?
        // Lines split by byte: "\r\n" is one Character, and a key file's line ends are bytes.
        for bytes in text.split(whereSeparator: { $0 == 0x0A || $0 == 0x0D }) {
            let line = Substring(String(decoding: bytes, as: UTF8.self)).trimmingBlanks
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                section = String(line.dropFirst().dropLast())
                continue
            }
            guard section == "GATT", let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingBlanks
            guard key == "Channels" else { continue }
            let text = line[line.index(after: equals)...].trimmingBlanks
            let number = text.lowercased().hasPrefix("0x") ? Int(text.dropFirst(2), radix: 16) : Int(text)
            value = number.flatMap { valid.contains($0) ? $0 : nil }
        }
        return value
    }

    /// The first ``maximumBytes`` of a regular file, nil when it cannot be opened or is not one.
    static func read(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while bytes.count < maximumBytes {
            let count = Glibc.read(descriptor, &buffer, min(buffer.count, maximumBytes - bytes.count))
            if count <= 0 { break }
            bytes += buffer.prefix(count)
        }
        return bytes
    }

    /// The event log's line about `setting`, or about not knowing it (nil).
    public static func note(_ setting: ATTChannelSetting?) -> String {
        setting?.note
            ?? "relay: could not read bluetoothd's main.conf: if its [GATT] Channels is above 1 (BlueZ 5.66 and older open "
            + "up to 3 ATT channels per link without it, 5.67 and later one), the relay's write commands can reach a device "
            + "that offers Enhanced ATT out of order (docs/relay.md, \"EATT\")"
    }

    /// The event log's line about it.
    public var note: String {
        switch channels {
        case 1?:
            "relay: bluetoothd opens one ATT channel per link ([GATT] Channels = 1 in \(file)): write commands reach the "
                + "device in order"
        case let channels?:
            "relay: bluetoothd opens up to \(channels) ATT channels per link ([GATT] Channels in \(file)): with a device that "
                + "offers Enhanced ATT, the relay's write commands can reach it out of order; set Channels = 1 there and "
                + "restart bluetoothd (docs/relay.md, \"EATT\")"
        case nil:
            "relay: \(file) sets no valid [GATT] Channels: BlueZ 5.66 and older then open up to 3 ATT channels per link "
                + "(Enhanced ATT), and the relay's write commands can reach a device that offers it out of order (5.67 and "
                + "later open one); set Channels = 1 there to be sure and restart bluetoothd (docs/relay.md, \"EATT\")"
        }
    }
}
