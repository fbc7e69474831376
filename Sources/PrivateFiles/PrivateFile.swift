#if canImport(Glibc)
    import Glibc
#endif

/// The one writer of gattemu's private outputs: what a device said (the relay's `-o` and `--capture`, `import -o`,
/// `clone -o`), the event log's report, the control token. Each is readable by its owner only, whole or not there.
///
/// The bytes go to a new file in the same folder (`O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600: never another
/// user's file, never through a link), are synced, and the file is renamed over `path`: a reader sees the old file
/// or the new one, and an existing file's mode (0644 before) is not kept. `path` itself may not be a symbolic link or
/// anything but a regular file.
public enum PrivateFile {
    /// The mode every private output gets.
    public static let mode: mode_t = 0o600

    /// Writes `bytes` to `path` as above.
    public static func write(_ bytes: some Collection<UInt8>, to path: String) throws(PrivateFileError) {
        try checkReplaceable(path)
        let temporary = temporaryPath(for: path)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw .failed(path, "cannot create \(temporary): \(reason())") }
        var remaining = Array(bytes)[...]
        var failure: String?
        while !remaining.isEmpty {
            let written = remaining.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else {
                failure = reason()
                break
            }
            remaining = remaining.dropFirst(written)
        }
        // fchmod: a umask may have taken bits the mode asked for; never more than 0600 either way.
        if failure == nil, fchmod(descriptor, mode) != 0 || fsync(descriptor) != 0 { failure = reason() }
        close(descriptor)
        if failure == nil, rename(temporary, path) != 0 { failure = reason() }
        if let failure {
            unlink(temporary)
            throw .failed(path, failure)
        }
    }

    /// Whether `path` could be replaced: not a symbolic link or any other non-regular file, in a folder this user
    /// may write. For checking an output before the work that makes it (bad input, exit 2, rather than work lost).
    public static func checkReplaceable(_ path: String) throws(PrivateFileError) {
        var info = stat()
        if lstat(path, &info) == 0 {
            switch info.st_mode & S_IFMT {
            case S_IFREG: break
            case S_IFLNK: throw .refused(path, "it is a symbolic link (give the real path)")
            default: throw .refused(path, "exists and is not a regular file")
            }
        }
        let folder = self.folder(of: path)
        if access(folder, W_OK) != 0 { throw .refused(path, "cannot write in \(folder)") }
    }

    /// A new folder of this user's own (mode 700) in `$TMPDIR` or `/tmp`, for outputs that could not go where they
    /// were asked to (a removed folder, a full disk there): a recording is not lost at exit for want of its path.
    public static func rescueFolder(environment: [String: String]) throws(PrivateFileError) -> String {
        let base = environment["TMPDIR"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
        var template = Array("\(base.hasSuffix("/") ? String(base.dropLast()) : base)/gattemu-rescue-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw .failed(base, "cannot make a folder there: \(reason())") }
        return String(cString: made)
    }

    static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let folder = String(path[..<slash])
        return folder.isEmpty ? "/" : folder
    }

    static func temporaryPath(for path: String) -> String {
        let folder = self.folder(of: path)
        let name = path.split(separator: "/").last.map(String.init) ?? "output"
        return "\(folder)/.\(name).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).new"
    }

    static func reason() -> String { String(cString: strerror(errno)).lowercased() }
}

/// Why a private output was not written.
public enum PrivateFileError: Error, CustomStringConvertible, Equatable {
    /// The path is not one to write to (a link, a folder, no write access): the caller's input.
    case refused(String, String)
    /// The system refused (disk full, …).
    case failed(String, String)

    public var description: String {
        switch self {
        case .refused(let path, let why), .failed(let path, let why): "\(path): \(why)"
        }
    }
}
