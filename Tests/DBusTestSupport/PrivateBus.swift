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

    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("gattemu-bus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let config = directory.appendingPathComponent("bus.conf")
        try """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:path=\(directory.path)/socket</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """.write(to: config, atomically: true, encoding: .utf8)
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw PrivateBusError.spawnFailed(errno) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, ends[1], 1)
        posix_spawn_file_actions_addclose(&actions, ends[0])
        let arguments = ["/usr/bin/dbus-daemon", "--config-file=\(config.path)", "--nofork", "--nopidfile", "--print-address=1"]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        // Worker threads block every signal and a child inherits that mask: clear it so SIGTERM works.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        var child: pid_t = 0
        let spawned = posix_spawn(&child, arguments[0], &actions, &attributes, &argv, environ)
        close(ends[1])
        guard spawned == 0 else {
            close(ends[0])
            throw PrivateBusError.spawnFailed(spawned)
        }
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

    /// A new connection to this bus.
    public func connect() async throws -> DBusConnection {
        try await DBusConnection.connect(to: .address(address))
    }

    /// Kills the daemon and waits for it; connections to it see the bus disappear.
    public func stop() {
        guard stopped.withLock({ stopped in defer { stopped = true }; return !stopped }) else { return }
        kill(pid, SIGTERM)
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
