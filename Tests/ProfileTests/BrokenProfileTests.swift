import Foundation
import Testing

@testable import Profile

/// Every `Fixtures/broken/NAME.json` must produce exactly the diagnostics in `NAME.expected`
/// (one per line, file paths shown relative to the fixture folder).
///
/// Set `RECORD_FIXTURES=1` to rewrite the `.expected` files in the source tree; review the diff.
@Suite struct BrokenProfileTests {
    static let names: [String] = {
        let folder = Paths.repository.appendingPathComponent("Tests/ProfileTests/Fixtures/broken")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return files.filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }.sorted()
    }()

    @Test func corpusIsPresent() {
        #expect(Self.names.count >= 20)
    }

    /// Objects with more than a handful of keys take another way to find duplicates (a set instead of comparing
    /// with the earlier keys); both must report them.
    @Test(arguments: [3, 40])
    func duplicateKeysAreReportedInSmallAndLargeObjects(unknownKeys: Int) {
        let unknown = (0..<unknownKeys).map { "\"x\($0)\": 0" }.joined(separator: ", ")
        let found = problems(#"{"format": 1, "# + unknown + #", "format": 1}"#)
        #expect(found.filter { $0.contains("duplicate key \"format\"") }.count == 1, "\(found)")
        #expect(found.filter { $0.contains("unknown key") }.count == unknownKeys)
    }

    @Test(arguments: names)
    func reportsExpectedDiagnostics(name: String) throws {
        let folder = try Paths.fixtures.appendingPathComponent("broken")
        let path = folder.appendingPathComponent(name + ".json").path
        let actual = ProfileValidator.validate(path: path).map {
            $0.description.replacingOccurrences(of: folder.path + "/", with: "")
        }
        #expect(!actual.isEmpty, "a broken profile must produce diagnostics")
        #expect(throws: ProfileError.self) { try ProfileLoader.load(path: path) }
        if ProcessInfo.processInfo.environment["RECORD_FIXTURES"] == "1" {
            let source = Paths.repository.appendingPathComponent("Tests/ProfileTests/Fixtures/broken/\(name).expected")
            try (actual.joined(separator: "\n") + "\n").write(to: source, atomically: true, encoding: .utf8)
            return
        }
        let expectedText = try String(contentsOf: folder.appendingPathComponent(name + ".expected"), encoding: .utf8)
        let expected = expectedText.split(separator: "\n").map(String.init)
        #expect(actual == expected)
    }
}
