import DBus
import Lexical

#if canImport(Glibc)
    import Glibc
#endif

/// The main.conf the running bluetoothd was started with, read as bluetoothd reads it: the file its command line
/// names (`-f`, else ``defaultFile``), a key in its own section only, the last one set. Settings gattemu warns about
/// (`[GATT] Channels` for the relay, `[GATT] ExchangeMTU` for a firmware target) come from here.
public struct BluetoothdConfiguration: Sendable, Equatable {
    /// The main.conf, as bluetoothd's command line names it.
    public var file: String
    /// Its first ``maximumBytes``.
    var text: [UInt8]
    /// Whether bluetoothd was started with `-E` (`--experimental`): it takes the experimental advertisement
    /// properties (the scan response fields) only then.
    public var experimental: Bool

    /// Where bluetoothd reads main.conf unless started with `-f FILE`.
    public static let defaultFile = "/etc/bluetooth/main.conf"
    /// The most bytes read of a command line or a main.conf.
    static let maximumBytes = 256 * 1024

    public init(file: String, text: [UInt8], experimental: Bool = false) {
        self.file = file
        self.text = Array(text.prefix(Self.maximumBytes))
        self.experimental = experimental
    }

    /// The configuration of the bluetoothd `stack` talks to: its process found by its bus name (and checked to be
    /// bluetoothd), its main.conf by its command line. Nil when it cannot be told (bluetoothd in another PID
    /// namespace, a file this user may not read).
    public static func of(_ stack: BlueZStack) async -> BluetoothdConfiguration? {
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
        return BluetoothdConfiguration(file: file, text: text, experimental: experimental(commandLine: commandLine))
    }

    /// Whether a bluetoothd command line turns on experimental interfaces: `-E`, `--experimental`, or `E` in a
    /// cluster of bluetoothd's flags without arguments (`-nE`).
    static func experimental(commandLine: [UInt8]) -> Bool {
        let arguments = commandLine.split(separator: 0).dropFirst().map { String(decoding: $0, as: UTF8.self) }
        for argument in arguments {
            if argument == "--experimental" { return true }
            if argument == "--" { return false }
            guard argument.hasPrefix("-"), !argument.hasPrefix("--") else { continue }
            let letters = argument.dropFirst()
            if !letters.isEmpty, letters.allSatisfy({ "nCEKT".contains($0) }), letters.contains("E") { return true }
        }
        return false
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

    /// `key` of `section` (a key file: `#` and `;` comments, `key = value`), the last one set, its blanks trimmed.
    public func value(section wantedSection: String, key wantedKey: String) -> Substring? {
        var section = ""
        var value: Substring?
        // Lines split by byte: "\r\n" is one Character, and a key file's line ends are bytes.
        for bytes in text.split(whereSeparator: { $0 == 0x0A || $0 == 0x0D }) {
            let line = Substring(String(decoding: bytes, as: UTF8.self)).trimmingBlanks
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                section = String(line.dropFirst().dropLast())
                continue
            }
            guard section == wantedSection, let equals = line.firstIndex(of: "=") else { continue }
            guard line[..<equals].trimmingBlanks == wantedKey else { continue }
            value = line[line.index(after: equals)...].trimmingBlanks
        }
        return value
    }

    /// `key` of `section` as a decimal or `0x` number in `valid`; nil when unset or anything else (where bluetoothd
    /// keeps its default or its versions differ).
    public func integer(section: String, key: String, valid: ClosedRange<Int>) -> Int? {
        guard let text = value(section: section, key: key) else { return nil }
        let number = text.lowercased().hasPrefix("0x") ? Int(text.dropFirst(2), radix: 16) : Int(text)
        return number.flatMap { valid.contains($0) ? $0 : nil }
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
}
