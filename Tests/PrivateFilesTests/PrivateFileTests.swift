import Foundation
import PrivateFiles
import Testing

/// The private outputs' writer: mode 0600 whatever was there, whole or not there, never through a link.
@Suite struct PrivateFileTests {
    static func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("private-file-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    }

    static func mode(_ path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
    }

    @Test func aNewFileIsTheOwnersOnly() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try PrivateFile.write(Array("lock's unlock exchange".utf8), to: "\(folder)/out.json")
        #expect(Self.mode("\(folder)/out.json") == 0o600)
        #expect(try String(contentsOfFile: "\(folder)/out.json", encoding: .utf8) == "lock's unlock exchange")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["out.json"], "no temporary file left")
    }

    /// Foundation's atomic write kept (or set) 0644 on Linux; the old contents' mode is not carried over.
    @Test func anExistingWorldReadableFileComesBackPrivate() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = "\(folder)/recording.btsnoop"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("old".utf8), attributes: [.posixPermissions: 0o644]))
        #expect(Self.mode(path) == 0o644)
        try PrivateFile.write([1, 2, 3], to: path)
        #expect(Self.mode(path) == 0o600)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data([1, 2, 3]))
    }

    /// Where a recording goes when its path cannot take it: a new folder only this user may enter.
    @Test func aRescueFolderIsNewAndTheOwnersOnly() throws {
        let base = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let first = try PrivateFile.rescueFolder(environment: ["TMPDIR": base])
        let second = try PrivateFile.rescueFolder(environment: ["TMPDIR": base + "/"])
        #expect(first != second && first.hasPrefix(base + "/gattemu-rescue-") && second.hasPrefix(base + "/gattemu-rescue-"))
        #expect(Self.mode(first) == 0o700)
        try PrivateFile.write([1], to: first + "/session.json")
        #expect(Self.mode(first + "/session.json") == 0o600)
    }

    @Test func aLinkOrAFolderAtThePathIsRefusedAndLeftAsItWas() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let target = "\(folder)/elsewhere"
        #expect(FileManager.default.createFile(atPath: target, contents: Data("theirs".utf8), attributes: [.posixPermissions: 0o644]))
        try FileManager.default.createSymbolicLink(atPath: "\(folder)/link.json", withDestinationPath: target)
        #expect(throws: PrivateFileError.refused("\(folder)/link.json", "it is a symbolic link (give the real path)")) {
            try PrivateFile.write([1], to: "\(folder)/link.json")
        }
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "theirs" && Self.mode(target) == 0o644)
        try FileManager.default.createDirectory(atPath: "\(folder)/dir", withIntermediateDirectories: false)
        #expect(throws: PrivateFileError.refused("\(folder)/dir", "exists and is not a regular file")) {
            try PrivateFile.write([1], to: "\(folder)/dir")
        }
        #expect(throws: PrivateFileError.self) { try PrivateFile.write([1], to: "\(folder)/missing/out.json") }
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: folder)) == ["elsewhere", "link.json", "dir"])
    }
}
