import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Starting helper processes (a `dbus-daemon`, a `gattemu` under test) from a Swift program.
public enum ChildProcess {
    /// `posix_spawn` failed with this `errno`.
    public struct SpawnFailure: Error {
        public let code: Int32
    }

    /// Starts `arguments` (the program looked up in `PATH`) with every signal unblocked and returns its
    /// process id. Swift's worker threads block every signal and a child
    /// inherits that mask, so without this SIGTERM would not stop it. `environment` is added to this
    /// process's own; `files` sets up the child's file descriptors.
    public static func spawn(
        _ arguments: [String], environment: [String: String] = [:],
        files: (inout posix_spawn_file_actions_t) -> Void = { _ in }
    ) throws(SpawnFailure) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        files(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        var envp: [UnsafeMutablePointer<CChar>?] = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, arguments[0], &actions, &attributes, &argv, &envp)
        guard result == 0 else { throw SpawnFailure(code: result) }
        return pid
    }
}

extension ChildProcess {
    /// Whether ``runUnprivileged(_:)`` really drops to another user (only root can).
    public static var canDropPrivileges: Bool { getuid() == 0 }

    /// Runs `arguments` as the unprivileged user `nobody` (uid 65534, through `setpriv`) when this process is
    /// root, else as this user, waits for it (off the concurrency pool: other tests keep running) and returns
    /// its exit status.
    public static func runUnprivileged(_ arguments: [String]) async throws(SpawnFailure) -> Int32 {
        let command =
            canDropPrivileges
            ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] + arguments
            : arguments
        let pid = try spawn(
            command,
            files: { actions in
                posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            })
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var status: Int32 = 0
                while true {
                    if waitpid(pid, &status, 0) == pid { return continuation.resume(returning: (status >> 8) & 0xFF) }
                    guard errno == EINTR else { return continuation.resume(returning: -Int32(errno)) }
                }
            }
        }
    }
}
