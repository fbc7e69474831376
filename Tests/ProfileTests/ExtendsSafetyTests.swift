import Foundation
import Testing

@testable import Profile

/// `extends` reads only `.json` files in the profile's folder (after resolving symlinks), unless allowed, and
/// reports cycles as cycles. Each test builds its files in a fresh temporary folder:
///
///     <tmp>/outside/secret          not JSON, must never be read
///     <tmp>/outside/base.json       a valid base outside the profile's folder
///     <tmp>/profile/…               the profiles under test
struct ExtendsSandbox {
    let root: URL
    var folder: URL { root.appendingPathComponent("profile") }
    var outside: URL { root.appendingPathComponent("outside") }

    static let base = #"{ "format": 1, "variables": { "fromBase": 1 } }"#

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("gattemu-extends-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("profile/sub"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: root.appendingPathComponent("outside"), withIntermediateDirectories: true)
        try write("r00t:$6$secret-hash:19000:0:99999:7:::\n", to: outside.appendingPathComponent("secret"))
        try write(Self.base, to: outside.appendingPathComponent("base.json"))
    }

    func write(_ text: String, to url: URL) throws {
        try text.write(to: url, atomically: true, encoding: .utf8)
    }

    /// Writes `profile/NAME` and returns its path.
    @discardableResult
    func profile(_ name: String, _ text: String) throws -> String {
        let url = folder.appendingPathComponent(name)
        try write(text, to: url)
        return url.path
    }

    func link(_ name: String, to target: String) throws {
        try FileManager.default.createSymbolicLink(atPath: folder.appendingPathComponent(name).path, withDestinationPath: target)
    }

    func remove() {
        try? FileManager.default.removeItem(at: root)
    }

    /// A profile that extends `target` with its `extends` key at line 2, column 3.
    static func extending(_ target: String) -> String {
        "{\n  \"extends\": \"\(target)\",\n  \"format\": 1\n}\n"
    }
}

@Suite struct ExtendsSafetyTests {
    func diagnostics(_ path: String, allow: Bool = false) -> [String] {
        ProfileValidator.validate(path: path, allowExtendsOutside: allow).map(\.description)
    }

    @Test func selfReferenceIsACycleAtTheExtendsKey() throws {
        let box = try ExtendsSandbox()
        defer { box.remove() }
        let path = try box.profile("self.json", ExtendsSandbox.extending("./self.json"))
        #expect(diagnostics(path) == ["\(path):2:3 extends: extends cycle: self.json → self.json"])
    }

    @Test func longerCyclesNameTheChain() throws {
        let box = try ExtendsSandbox()
        defer { box.remove() }
        let a = try box.profile("a.json", ExtendsSandbox.extending("sub/b.json"))
        try box.profile("sub/b.json", ExtendsSandbox.extending("../c.json"))
        try box.profile("c.json", ExtendsSandbox.extending("a.json"))
        let found = diagnostics(a)
        #expect(found.count == 1)
        #expect(found.first?.hasSuffix("c.json:2:3 extends: extends cycle: a.json → sub/b.json → c.json → a.json") == true, "\(found)")
        // A chain that does not loop but is long is "too deep", not a cycle.
        for index in 0..<20 { try box.profile("d\(index).json", ExtendsSandbox.extending("d\(index + 1).json")) }
        try box.profile("d20.json", ExtendsSandbox.base)
        #expect(diagnostics(box.folder.appendingPathComponent("d0.json").path).first?.contains("extends chain is too deep") == true)
    }

    @Test func absolutePathsAndEscapesAreRefusedWithoutReading() throws {
        let box = try ExtendsSandbox()
        defer { box.remove() }
        let absolute = try box.profile("absolute.json", ExtendsSandbox.extending(box.outside.appendingPathComponent("base.json").path))
        #expect(
            diagnostics(absolute).map { $0.replacingOccurrences(of: box.outside.path, with: "OUT") } == [
                "\(absolute):2:3 extends: \"OUT/base.json\" is an absolute path; extends takes a path relative to this file (a base must be in the profile's folder unless allowed (--allow-extends-outside))"
            ])
        let escape = try box.profile("escape.json", ExtendsSandbox.extending("../outside/base.json"))
        #expect(
            diagnostics(escape) == [
                "\(escape):2:3 extends: \"../outside/base.json\" is outside the profile's folder (a base must be in the profile's folder unless allowed (--allow-extends-outside))"
            ])
        // Going out and back in is fine; so is allowing it.
        try box.profile("inside.json", ExtendsSandbox.base)
        #expect(diagnostics(try box.profile("back.json", ExtendsSandbox.extending("../profile/inside.json"))) == [])
        #expect(diagnostics(absolute, allow: true) == [])
        #expect(diagnostics(escape, allow: true) == [])
        let loaded = try ProfileLoader.load(path: escape, allowExtendsOutside: true)
        #expect(loaded.initialVariables["fromBase"] == .number(1))
    }

    @Test func onlyJSONFilesAreRead() throws {
        let box = try ExtendsSandbox()
        defer { box.remove() }
        try box.write("not json at all", to: box.folder.appendingPathComponent("notes.txt"))
        let text = try box.profile("text.json", ExtendsSandbox.extending("notes.txt"))
        #expect(diagnostics(text) == ["\(text):2:3 extends: \"notes.txt\" is not a .json file; extends only reads .json profiles"])
        // Even when allowed outside: /etc/shadow-like files are not read, so no byte of them can leak.
        let secret = try box.profile("secret.json", ExtendsSandbox.extending("../outside/secret"))
        let found = diagnostics(secret, allow: true)
        #expect(found.count == 1)
        #expect(!found.joined().contains("r0") && !found.joined().contains("'r'") && !found.joined().contains("unexpected"))
        // A folder named like a profile is not a regular file.
        try FileManager.default.createDirectory(at: box.folder.appendingPathComponent("folder.json"), withIntermediateDirectories: true)
        let folder = try box.profile("dir.json", ExtendsSandbox.extending("folder.json"))
        #expect(diagnostics(folder) == ["\(folder):2:3 extends: \"\(box.folder.path)/folder.json\" is not a regular file"])
        let missing = try box.profile("missing.json", ExtendsSandbox.extending("nothing.json"))
        #expect(
            diagnostics(missing) == [
                "\(missing):2:3 extends: cannot read \"\(box.folder.path)/nothing.json\" (extends paths are relative to the extending file)"
            ])
    }

    @Test func symlinksAreResolvedBeforeTheFolderCheck() throws {
        let box = try ExtendsSandbox()
        defer { box.remove() }
        try box.link("out.json", to: box.outside.appendingPathComponent("base.json").path)
        try box.link("shadow.json", to: box.outside.appendingPathComponent("secret").path)
        try box.link("linked", to: box.outside.path)
        let out = try box.profile("out-link.json", ExtendsSandbox.extending("out.json"))
        let real = try #require(ProfileFiles.realPath(box.outside.appendingPathComponent("base.json").path))
        #expect(
            diagnostics(out) == [
                "\(out):2:3 extends: \"out.json\" leads outside the profile's folder, to \(real) (a base must be in the profile's folder unless allowed (--allow-extends-outside))"
            ])
        #expect(diagnostics(out, allow: true) == [])
        // Through a linked folder: the same.
        let throughFolder = try box.profile("folder-link.json", ExtendsSandbox.extending("linked/base.json"))
        #expect(diagnostics(throughFolder).first?.contains("leads outside the profile's folder") == true)
        // A .json link to a file that is not .json is never read, even when outside is allowed.
        let shadow = try box.profile("shadow-link.json", ExtendsSandbox.extending("shadow.json"))
        let secret = try #require(ProfileFiles.realPath(box.outside.appendingPathComponent("secret").path))
        #expect(
            diagnostics(shadow, allow: true) == [
                "\(shadow):2:3 extends: \"shadow.json\" leads to \(secret), not a .json file; extends only reads .json profiles"
            ])
        // A symlink to a profile inside the folder is followed.
        try box.profile("sub/real.json", ExtendsSandbox.base)
        try box.link("alias.json", to: box.folder.appendingPathComponent("sub/real.json").path)
        #expect(diagnostics(try box.profile("alias-user.json", ExtendsSandbox.extending("alias.json"))) == [])
    }

    @Test func profilesGivenAsTextAreAnchoredAtTheirFileName() throws {
        let box = try ExtendsSandbox()
        defer { box.remove() }
        try box.profile("base.json", ExtendsSandbox.base)
        let file = box.folder.appendingPathComponent("virtual.json").path
        let profile = try ProfileLoader.load(json: ExtendsSandbox.extending("base.json"), file: file)
        #expect(profile.initialVariables["fromBase"] == .number(1))
        #expect(ProfileValidator.validate(json: ExtendsSandbox.extending("../outside/base.json"), file: file).count == 1)
        #expect(
            ProfileValidator.validate(json: ExtendsSandbox.extending("virtual.json"), file: file).map(\.message)
                == ["extends cycle: virtual.json → virtual.json"])
    }

    @Test func oversizedFilesAreRefusedBeforeReading() throws {
        let box = try ExtendsSandbox()
        defer { box.remove() }
        let big = box.folder.appendingPathComponent("big.json")
        #expect(FileManager.default.createFile(atPath: big.path, contents: nil))
        let handle = try FileHandle(forWritingTo: big)
        try handle.truncate(atOffset: UInt64(ProfileLimits.fileSize + 1))  // sparse: no disk used
        try handle.close()
        let user = try box.profile("big-user.json", ExtendsSandbox.extending("big.json"))
        #expect(
            diagnostics(user) == [
                "\(user):2:3 extends: \"\(box.folder.path)/big.json\" is \(ProfileLimits.fileSize + 1) bytes, over the 16 MiB limit"
            ])
        #expect(diagnostics(big.path) == ["\(big.path):1:1: the file is \(ProfileLimits.fileSize + 1) bytes, over the 16 MiB limit"])
    }
}
