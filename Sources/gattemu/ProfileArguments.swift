import ArgumentParser
import Emulator
import FoundationEssentials
import Profile

/// Loads a profile with `--set` overrides, or fails with every located problem (exit 2).
func loadProfile(_ path: String, overrides: [String], allowExtendsOutside: Bool = false) throws -> DeviceProfile {
    let pairs = try overrides.map { assignment -> (path: String, value: String) in
        guard let equals = assignment.firstIndex(of: "="), equals != assignment.startIndex else {
            throw Failure.badInput("--set \(assignment): expected path=value, e.g. variables.hardwareCode=2P")
        }
        return (String(assignment[..<equals]), String(assignment[assignment.index(after: equals)...]))
    }
    guard FileManager.default.fileExists(atPath: path) else {
        throw Failure.badInput("\(path): no such profile")
    }
    let profile: DeviceProfile
    do {
        profile = try ProfileLoader.load(path: path, overrides: pairs, allowExtendsOutside: allowExtendsOutside)
    } catch {
        throw Failure.badInput(error.description)
    }
    let budget = ProfileMapping.advertisementDiagnostics(profile)
    if !budget.isEmpty {
        throw Failure.badInput(budget.map(\.description).joined(separator: "\n"))
    }
    return profile
}
