import Foundation
import Testing

@testable import Control

#if canImport(Glibc)
    import Glibc
#endif

/// The token `gattemu run` makes when none is given: where it goes, who may read it, and that `gattemu ctl`'s
/// lookup finds it for the port and only there.
@Suite struct ControlTokenFileTests {
    /// A fresh folder standing in for `$XDG_RUNTIME_DIR`.
    static func runtime() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gattemu-token-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        return path
    }

    static func mode(_ path: String) -> mode_t {
        var info = stat()
        lstat(path, &info)
        return info.st_mode & 0o777
    }

    @Test func theFileIsMadeOnlyForItsUserAndFoundForItsPortAndRemoved() throws {
        let runtime = try Self.runtime()
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        let environment = ["XDG_RUNTIME_DIR": runtime]
        let token = ControlTokenFile.newToken()
        #expect(token.count == 64 && token.allSatisfy(\.isHexDigit))
        #expect(ControlTokenFile.newToken() != token)
        #expect(try ControlTokenFile.find(port: 8765, environment: environment) == nil, "no gattemu yet")

        let path = try ControlTokenFile.write(token, port: 8765, environment: environment)
        #expect(path == runtime + "/gattemu/control-8765.token")
        #expect(Self.mode(runtime + "/gattemu") == 0o700 && Self.mode(path) == 0o600)
        #expect(try ControlTokenFile.find(port: 8765, environment: environment) == token)
        #expect(try ControlTokenFile.find(port: 8766, environment: environment) == nil, "another port's gattemu")

        // A stale file (a gattemu that was killed) is replaced; only the file still holding this run's token is removed.
        let next = ControlTokenFile.newToken()
        _ = try ControlTokenFile.write(next, port: 8765, environment: environment)
        ControlTokenFile.remove(path: path, token: token)
        #expect(try ControlTokenFile.find(port: 8765, environment: environment) == next)
        ControlTokenFile.remove(path: path, token: next)
        #expect(try ControlTokenFile.find(port: 8765, environment: environment) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: runtime + "/gattemu").isEmpty, "no temporary file left")
    }

    /// A folder another user made first where gattemu keeps the token (`/tmp/gattemu-UID` with no `XDG_RUNTIME_DIR`)
    /// does not stop the run: the token goes to a new folder of its own, and the caller is told why and where.
    @Test func aPlantedFolderDoesNotStopTheRun() throws {
        let runtime = try Self.runtime()
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        let planted = runtime + "/gattemu"
        try FileManager.default.createDirectory(atPath: planted, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o777])
        let token = ControlTokenFile.newToken()
        let written = try ControlTokenFile.writeSomewhere(token, port: 8765, environment: ["XDG_RUNTIME_DIR": runtime])
        #expect(written.instead?.contains("group or others may access it") == true, "\(written)")
        #expect(written.path.hasPrefix("/tmp/gattemu-\(geteuid())-") && written.path.hasSuffix("/control-8765.token"), "\(written.path)")
        #expect(Self.mode(written.path) == 0o600)
        let folder = (written.path as NSString).deletingLastPathComponent
        #expect(Self.mode(folder) == 0o700)
        #expect(try String(contentsOfFile: written.path, encoding: .utf8) == token + "\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: planted).isEmpty, "nothing written where others could read it")
        try FileManager.default.removeItem(atPath: folder)
    }

    @Test func withoutXDGRuntimeDirTheFolderIsPerUserInTmp() {
        #expect(ControlTokenFile.directory(environment: [:]) == "/tmp/gattemu-\(geteuid())")
        #expect(ControlTokenFile.directory(environment: ["XDG_RUNTIME_DIR": "relative"]) == "/tmp/gattemu-\(geteuid())")
        #expect(ControlTokenFile.path(port: 9, environment: ["XDG_RUNTIME_DIR": "/run/user/7/"]) == "/run/user/7/gattemu/control-9.token")
    }

    /// A folder someone else could have planted (a symlink, one open to others) is refused, for writing and for reading.
    @Test func aFolderOthersCouldUseIsRefused() throws {
        let runtime = try Self.runtime()
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        let environment = ["XDG_RUNTIME_DIR": runtime]
        let elsewhere = try Self.runtime()
        defer { try? FileManager.default.removeItem(atPath: elsewhere) }
        try FileManager.default.createSymbolicLink(atPath: runtime + "/gattemu", withDestinationPath: elsewhere)
        do {
            _ = try ControlTokenFile.write("t", port: 1, environment: environment)
            Issue.record("wrote the token through a symlink")
        } catch {
            #expect(error.message.contains("not a folder"), "\(error.message)")
        }
        #expect(throws: ControlSetupError.self) { try ControlTokenFile.find(port: 1, environment: environment) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty)

        try FileManager.default.removeItem(atPath: runtime + "/gattemu")
        try FileManager.default.createDirectory(
            atPath: runtime + "/gattemu", withIntermediateDirectories: false, attributes: [.posixPermissions: 0o777])
        chmod(runtime + "/gattemu", 0o777)
        do {
            _ = try ControlTokenFile.write("t", port: 1, environment: environment)
            Issue.record("wrote the token into a folder others may use")
        } catch {
            #expect(error.message.contains("chmod 700"), "\(error.message)")
        }
        // Another user's folder (made first in /tmp): only root can set that up here.
        chmod(runtime + "/gattemu", 0o700)
        if geteuid() == 0 {
            chown(runtime + "/gattemu", 65534, 65534)
            #expect(throws: ControlSetupError.self) { try ControlTokenFile.write("t", port: 1, environment: environment) }
            #expect(throws: ControlSetupError.self) { try ControlTokenFile.find(port: 1, environment: environment) }
        }
    }
}
