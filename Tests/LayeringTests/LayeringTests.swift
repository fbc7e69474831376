import Foundation
import Testing

/// The modules' arrows point one way: the runtime and the profile format know nothing of the control API's
/// contract or of HTTP, and the lexical rules sit below both their users. Checked in Package.swift (dependencies,
/// transitively) and in every source file's imports, so that a failure names the file.
@Suite struct LayeringTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Module → modules it must not reach.
    static let forbidden: [String: Set<String>] = [
        "Bluetooth": ["JSON", "Lexical", "Profile", "ControlContract", "Emulator", "Control", "BlueZ", "DBus"],
        // The JSON tree, its parser and printers: below every reader and writer of JSON, knowing none of them.
        "JSON": ["Lexical", "Profile", "Replica", "ControlContract", "ControlBodies", "Emulator", "Control", "BlueZ", "DBus"],
        "Lexical": ["Profile", "ControlContract", "ControlBodies", "Emulator", "Control", "BlueZ", "DBus"],
        "Profile": ["ControlContract", "ControlBodies", "Control", "Emulator", "BlueZ", "DBus"],
        "Emulator": ["ControlContract", "ControlBodies", "Control"],
        // The firmware-update protocol is pure: no bus, no runtime, no profile format.
        "McuMgr": ["DBus", "BlueZ", "Emulator", "Profile", "ControlContract", "Control", "Bluetooth"],
        "Digest": ["Bluetooth", "DBus", "BlueZ", "Emulator", "Profile", "McuMgr"],
    ]

    /// Each target's direct dependencies on other targets (products of packages left out), from Package.swift.
    static func targets(_ manifest: String) throws -> [String: [String]] {
        var targets: [String: [String]] = [:]
        let declaration = try Regex(#"\.(?:target|executableTarget|testTarget)\(\s*name:\s*"([^"]+)"(?:,\s*dependencies:\s*\[([^\]]*)\])?"#)
        for match in manifest.matches(of: declaration) {
            guard let name = match.output[1].substring.map(String.init) else { continue }
            let list = match.output[2].substring.map(String.init) ?? ""
            // Plain strings are targets; `.product(name: …)` entries name packages' products.
            let withoutProducts = list.replacing(try Regex(#"\.product\([^)]*\)"#), with: "")
            targets[name] = withoutProducts.matches(of: try Regex(#""([^"]+)""#)).compactMap { $0.output[1].substring.map(String.init) }
        }
        return targets
    }

    static func reachable(from name: String, in targets: [String: [String]]) -> Set<String> {
        var seen: Set<String> = []
        var pending = targets[name] ?? []
        while let next = pending.popLast() {
            guard seen.insert(next).inserted else { continue }
            pending += targets[next] ?? []
        }
        return seen
    }

    @Test func packageDependenciesPointOneWay() throws {
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let targets = try Self.targets(manifest)
        for (module, banned) in Self.forbidden.sorted(by: { $0.key < $1.key }) {
            #expect(targets[module] != nil, "Package.swift: no target \(module)")
            let reached = Self.reachable(from: module, in: targets)
            #expect(reached.isDisjoint(with: banned), "Package.swift: \(module) depends on \(reached.intersection(banned).sorted())")
        }
        // The parse sees what the manifest says (a check that reads nothing would pass).
        #expect(Self.reachable(from: "Control", in: targets).isSuperset(of: ["Emulator", "ControlContract", "Profile", "Lexical"]))
    }

    @Test func sourceFilesImportOnlyWhatTheirLayerMay() throws {
        let importLine = try Regex(#"^\s*(?:@\w+\s+)*import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?(\w+)"#)
        var checked = 0
        for (module, banned) in Self.forbidden.sorted(by: { $0.key < $1.key }) {
            let folder = Self.root.appendingPathComponent("Sources").appendingPathComponent(module)
            let files = try #require(FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil))
            for case let file as URL in files where file.pathExtension == "swift" {
                checked += 1
                let text = try String(contentsOf: file, encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    guard let match = try importLine.firstMatch(in: String(line)),
                        let imported = match.output[1].substring.map(String.init), banned.contains(imported)
                    else { continue }
                    let path = file.path.replacingOccurrences(of: Self.root.path + "/", with: "")
                    Issue.record("\(path):\(number + 1): module \(module) imports \(imported)")
                }
            }
        }
        #expect(checked > 50, "the sources were found")
    }
}
