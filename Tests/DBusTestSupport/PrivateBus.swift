import DBus
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A private `dbus-daemon` for one test: a real message bus with nothing else on it.
///
/// Stop it with ``stop()``; it is also killed when the instance is released.
public final class PrivateBus: Sendable {
    /// The bus address, e.g. `unix:path=/tmp/gattemu-bus-XXXX/socket,guid=…`.
    public let address: String
    private let pid: pid_t
    private let directory: URL
    private let output: FileHandle
    private let stopped = Mutex(false)

    /// Who may do what on the bus.
    public enum Policy: Sendable {
        /// Anyone may own any name and call anything (most tests).
        case permissive
        /// The policy of this machine's system bus: Debian's `/usr/share/dbus-1/system.conf` with its
        /// `system.d` files (BlueZ's `bluetooth.conf`), on a socket of its own that any user may reach.
        case system
    }

    public init(policy: Policy = .permissive) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("gattemu-bus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // Other users (an unprivileged attacker in a test) must reach the socket.
        chmod(directory.path, 0o755)
        let config = directory.appendingPathComponent("bus.conf")
        if case .system = policy {
            try Self.systemConfiguration(socket: directory.path + "/socket").write(to: config, atomically: true, encoding: .utf8)
        } else {
            try Self.permissiveConfiguration(socket: directory.path + "/socket").write(to: config, atomically: true, encoding: .utf8)
        }
        var ends: [Int32] = [0, 0]

        guard pipe(&ends) == 0 else { throw PrivateBusError.spawnFailed(errno) }
        let arguments = ["/usr/bin/dbus-daemon", "--config-file=\(config.path)", "--nofork", "--nopidfile", "--print-address=1"]
        let (write, read) = (ends[1], ends[0])
        let child: pid_t
        do {
            child = try ChildProcess.spawn(arguments) { (actions: inout posix_spawn_file_actions_t) in
                posix_spawn_file_actions_adddup2(&actions, write, 1)
                posix_spawn_file_actions_addclose(&actions, read)
            }
        } catch {
            close(write)
            close(read)
            throw PrivateBusError.spawnFailed(error.code)
        }
        close(write)
        pid = child
        let reader = FileHandle(fileDescriptor: ends[0], closeOnDealloc: true)
        guard let line = reader.readLine(), !line.isEmpty else {
            kill(child, SIGKILL)
            var status: Int32 = 0
            waitpid(child, &status, 0)
            throw PrivateBusError.noAddress
        }
        address = line
        self.output = reader
    }

    static func permissiveConfiguration(socket: String) -> String {
        """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:path=\(socket)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """
    }

    /// Debian's system bus configuration, listening on `socket` instead, without dropping to the
    /// `messagebus` user, and with its relative `system.d` made absolute.
    static func systemConfiguration(socket: String) throws -> String {
        var text = try String(contentsOfFile: "/usr/share/dbus-1/system.conf", encoding: .utf8)
        text = text.replacing(/<listen>[^<]*<\/listen>/, with: "<listen>unix:path=\(socket)</listen>")
        text = text.replacing(/<user>[^<]*<\/user>/, with: "")
        text = text.replacing(/<pidfile>[^<]*<\/pidfile>/, with: "")
        text = text.replacing(/<servicehelper>[^<]*<\/servicehelper>/, with: "")
        text = text.replacing("<includedir>system.d</includedir>", with: "<includedir>/usr/share/dbus-1/system.d</includedir>")
        return text
    }

    /// A new connection to this bus.
    public func connect() async throws -> DBusConnection {
        try await DBusConnection.connect(to: .address(address))
    }

    /// Stops the daemon without closing its sockets (SIGSTOP): a bus that reads nothing, as a hung one does.
    public func freeze() { kill(pid, SIGSTOP) }

    /// Kills the daemon and waits for it; connections to it see the bus disappear.
    public func stop() {
        guard
            stopped.withLock({ stopped in
                defer { stopped = true }
                return !stopped
            })
        else { return }
        kill(pid, SIGTERM)
        kill(pid, SIGCONT)  // a frozen daemon acts on the SIGTERM only once it runs
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}

public enum PrivateBusError: Error {
    case noAddress
    case spawnFailed(Int32)
}

extension FileHandle {
    /// Reads one line (without the newline), byte by byte so nothing after it is consumed.
    func readLine() -> String? {
        var bytes: [UInt8] = []
        while true {
            guard let chunk = try? read(upToCount: 1), let byte = chunk.first else { break }
            if byte == UInt8(ascii: "\n") { break }
            bytes.append(byte)
        }
        return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }
}
