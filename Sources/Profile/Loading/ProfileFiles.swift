import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// File-system helpers of the loader: path arithmetic, symlink resolution and bounded reads.
public enum ProfileFiles {
    /// Why a file was not read.
    public struct Problem: Error, Equatable {
        /// Follows the file's name: "is not a regular file".
        public var message: String

        static let unreadable = Problem(message: "cannot be read")
    }

    /// The whole file, when it can be read and is at most ``ProfileLimits/fileSize`` bytes; FIFOs and devices
    /// only when `requireRegularFile` is false (then read to their end).
    public static func read(_ path: String, requireRegularFile: Bool) -> Result<[UInt8], Problem> {
        var status = stat()
        guard stat(path, &status) == 0 else { return .failure(.unreadable) }
        let isRegular = status.st_mode & S_IFMT == S_IFREG
        if requireRegularFile, !isRegular { return .failure(Problem(message: "is not a regular file")) }
        if isRegular, Int(status.st_size) > ProfileLimits.fileSize {
            return .failure(Problem(message: "is \(status.st_size) bytes, over the \(ProfileLimits.fileSize >> 20) MiB limit"))
        }
        guard let data = FileManager.default.contents(atPath: path) else { return .failure(.unreadable) }
        guard data.count <= ProfileLimits.fileSize else {
            return .failure(Problem(message: "is over the \(ProfileLimits.fileSize >> 20) MiB limit"))
        }
        return .success([UInt8](data))
    }

    /// The path with every symlink, `.` and `..` resolved (`realpath`); nil when it does not exist.
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// An absolute, normalized path with symlinks resolved as far as it exists: the path itself, else its folder
    /// (then the last component is kept as it is), else the path unchanged.
    static func resolved(_ path: String) -> String {
        if let real = realPath(path) { return real }
        let folder = folder(of: path)
        guard folder != path, let real = realPath(folder) else { return path }
        return (real == "/" ? "" : real) + "/" + lastComponent(of: path)
    }

    /// `path` made absolute against the current directory (not resolved).
    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    /// Everything before the last `/` (`/` for a file at the root).
    static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func lastComponent(of path: String) -> String {
        path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
    }

    /// An absolute path with `.`, `..` and repeated slashes removed lexically (symlinks are not followed).
    static func normalized(_ path: String) -> String {
        var components: [Substring] = []
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch component {
            case ".": continue
            case "..": _ = components.popLast()
            default: components.append(component)
            }
        }
        return "/" + components.joined(separator: "/")
    }

    /// Whether `path` is strictly inside `folder` (both absolute and normalized).
    static func isInside(_ path: String, folder: String) -> Bool {
        folder == "/" ? path.count > 1 : path.hasPrefix(folder + "/")
    }

    /// `relative` next to `file`, as diagnostics name it (an absolute `relative` stays as it is).
    static func join(_ relative: String, relativeTo file: String) -> String {
        if relative.hasPrefix("/") { return relative }
        guard let slash = file.lastIndex(of: "/") else { return relative }
        return String(file[...slash]) + relative
    }
}
