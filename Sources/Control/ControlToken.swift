#if canImport(Glibc)
    import Glibc
#endif

/// Reading the bearer token from a file (`gattemu run --control-token-file`, `gattemu ctl --token-file`):
/// its first line, without the line ending. A file that group or others may read or write is refused, as
/// ssh refuses such a private key: the token would not be secret.
public enum ControlToken {
    /// The environment variable `gattemu run` and `gattemu ctl` read the token from.
    public static let environmentVariable = "GATTEMU_CONTROL_TOKEN"

    public static func read(file path: String, option: String) throws(ControlSetupError) -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw ControlSetupError(message: "\(option) \(path): \(String(cString: strerror(errno)).lowercased())")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw ControlSetupError(message: "\(option) \(path): not a regular file")
        }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw ControlSetupError(
                message: "\(option) \(path): group or others may access it (mode \(String(mode, radix: 8))); chmod 600 \(path)")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 64 * 1024, !bytes.contains(0x0A) {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        var line = bytes.prefix { $0 != 0x0A }
        if line.last == 0x0D { line.removeLast() }
        guard !line.isEmpty, let token = String(validating: line, as: UTF8.self) else {
            throw ControlSetupError(message: "\(option) \(path): the first line must hold the token")
        }
        return token
    }
}
