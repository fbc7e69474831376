import ArgumentParser
import Emulator
import FoundationEssentials
import Profile

/// Check profiles without touching BlueZ; every problem is printed with file:line:column and its JSON path.
struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check profiles; prints each problem as file:line:column path: message (hint). Exit 2 on any problem.")

    @Argument(help: "Profiles to check.")
    var profiles: [String]

    @Option(name: .customLong("set"), help: ArgumentHelp("Override a profile value before checking.", valueName: "path=value"))
    var overrides: [String] = []

    @Flag(help: "Let `extends` read profiles outside each profile's folder (absolute paths, `..`, symlinks).")
    var allowExtendsOutside = false

    func run() throws {
        var failed = false
        for path in profiles {
            do {
                _ = try loadProfile(path, overrides: overrides, allowExtendsOutside: allowExtendsOutside)
                print("\(path): ok")
            } catch let failure as Failure {
                failed = true
                DescriptorOutput.writeError(failure.message + "\n")
            }
        }
        if failed { throw ExitCode(Failure.badInput) }
    }
}
