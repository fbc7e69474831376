import PrivateFiles

#if canImport(Glibc)
    import Glibc
#endif

/// The token `gattemu run` makes when none is given, in a file only its user can read, where `gattemu ctl` (and
/// the e2e helpers) of the same user find it for a port: `$XDG_RUNTIME_DIR/gattemu/control-PORT.token`, or
/// `/tmp/gattemu-UID/control-PORT.token` without `XDG_RUNTIME_DIR` (docs/security.md, "Control API").
///
/// The folder is created with mode 700; one that is a symlink, is owned by another user or that group or others
/// may access is refused (another user could have made it first in /tmp to read the token).
public enum ControlTokenFile {
    /// The folder for this user (not created).
    public static func directory(environment: [String: String]) -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return (runtime.hasSuffix("/") ? String(runtime.dropLast()) : runtime) + "/gattemu"
        }
        return "/tmp/gattemu-\(geteuid())"
    }

    /// The token file for a control API on `port`.
    public static func path(port: Int, environment: [String: String]) -> String {
        directory(environment: environment) + "/" + fileName(port: port)
    }

    /// The token file's name in its folder: one per port, so that several gattemus of one user keep theirs apart.
    static func fileName(port: Int) -> String { "control-\(port).token" }

    /// Creates the folder (mode 700) when missing, and checks it is this user's own.
    public static func prepareDirectory(environment: [String: String]) throws(ControlSetupError) -> String {
        let path = directory(environment: environment)
        if mkdir(path, 0o700) != 0, errno != EEXIST {
            throw ControlSetupError(
                message: "cannot create \(path) for the control token: \(String(cString: strerror(errno)).lowercased())")
        }
        try checkDirectory(path)
        return path
    }

    /// A new random token: 32 bytes from the system's generator, as 64 hex digits.
    public static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in
            let byte = UInt8.random(in: 0...255, using: &generator)
            return (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }.joined()
    }

    /// Writes `token` to ``path(port:environment:)`` (mode 600, replacing a stale file atomically); returns the path.
    public static func write(_ token: String, port: Int, environment: [String: String]) throws(ControlSetupError) -> String {
        let directory = try prepareDirectory(environment: environment)
        return try writeToken(token, in: directory, port: port)
    }

    /// The token file for `port` in `directory`, written privately (``PrivateFile``); its path.
    private static func writeToken(_ token: String, in directory: String, port: Int) throws(ControlSetupError) -> String {
        let path = directory + "/" + fileName(port: port)
        do {
            try PrivateFile.write(Array((token + "\n").utf8), to: path)
        } catch {
            throw ControlSetupError(message: "cannot write \(error)")
        }
        return path
    }

    /// Where the token went when its usual folder cannot be used (another user made `/tmp/gattemu-UID` first, where
    /// there is no `XDG_RUNTIME_DIR`: cron, CI runners, sudo): a new private folder, so that the run goes on.
    public struct Written: Sendable, Equatable {
        public var path: String
        /// Why the usual folder was not used; nil when it was.
        public var instead: String?
    }

    /// ``write(_:port:environment:)``, or, when the usual folder is refused, the same file in a new folder of this
    /// user's own (mode 700, made with `mkdtemp` in `/tmp`): someone who can make a folder must not be able to stop a
    /// run. `gattemu ctl` does not look there: the caller says where it is.
    public static func writeSomewhere(_ token: String, port: Int, environment: [String: String]) throws(ControlSetupError) -> Written {
        let refused: ControlSetupError
        do {
            return Written(path: try write(token, port: port, environment: environment))
        } catch {
            refused = error
        }
        var template = Array("/tmp/gattemu-\(geteuid())-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw ControlSetupError(
                message: "\(refused.message); and no folder of its own in /tmp: \(String(cString: strerror(errno)).lowercased())")
        }
        let directory = String(cString: made)
        try checkDirectory(directory)
        return Written(path: try writeToken(token, in: directory, port: port), instead: refused.message)
    }

    /// Removes the file at a clean stop, unless it no longer holds `token` (another gattemu's since).
    public static func remove(path: String, token: String) {
        guard (try? ControlToken.read(file: path, option: "token file")) == token else { return }
        unlink(path)
    }

    /// The token of this user's gattemu on `port`, nil when there is no such file (none running, or one started
    /// with its own token or `--control-token none`). A folder or file others could have planted or read is an error.
    public static func find(port: Int, environment: [String: String]) throws(ControlSetupError) -> String? {
        let directory = directory(environment: environment)
        var info = stat()
        guard lstat(directory, &info) == 0 else { return nil }
        try checkDirectory(directory)
        let path = directory + "/" + fileName(port: port)
        guard lstat(path, &info) == 0 else { return nil }
        return try ControlToken.read(file: path, option: "token file")
    }

    static func checkDirectory(_ path: String) throws(ControlSetupError) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw ControlSetupError(message: "\(path): \(String(cString: strerror(errno)).lowercased())")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw ControlSetupError(
                message: "\(path) is not a folder (a symlink?): refusing to keep the control token there; remove it or set XDG_RUNTIME_DIR")
        }
        guard info.st_uid == geteuid() else {
            throw ControlSetupError(
                message:
                    "\(path) belongs to uid \(info.st_uid), not to this user: refusing to keep the control token there; remove it or set XDG_RUNTIME_DIR"
            )
        }
        guard info.st_mode & 0o077 == 0 else {
            throw ControlSetupError(
                message: "\(path): group or others may access it (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 700 \(path)")
        }
    }
}
