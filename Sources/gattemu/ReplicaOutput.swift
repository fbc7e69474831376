import ArgumentParser
import Emulator
import FoundationEssentials
import PrivateFiles
import Profile
import Replica
import TextEscaping

#if canImport(Glibc)
    import Glibc
#endif

/// Delivering a reconstructed profile (`import`, `clone`): checked as `gattemu run` would load it, written
/// atomically and privately to `-o` (``PrivateFile``: it holds a device's conversation), or to standard output, and
/// the report after it.
enum ReplicaOutput {
    /// Bad input (exit 2) unless `path` can be written: its directory exists and is writable, and the path is
    /// not a symbolic link or something other than a regular file (``PrivateFile/checkReplaceable(_:)``).
    static func checkWritable(_ path: String, option: String = "-o") throws {
        do {
            try PrivateFile.checkReplaceable(path)
        } catch {
            throw Failure.badInput("\(option) \(error)")
        }
    }

    /// Writes the profile and prints `header` and the result's report: to standard output when the profile
    /// went to a file, else to standard error. A profile that does not load is still written (to be fixed by
    /// hand) and ends the command with exit 1: that is a gattemu bug.
    static func deliver(_ result: ReplicaProfile.Result, to output: String?, header: [String]) throws {
        let text = result.text
        var problems: [String] = []
        do {
            let profile = try ProfileLoader.load(json: text, file: output ?? "profile.json")
            problems = ProfileMapping.advertisementDiagnostics(profile).map(\.description)
        } catch {
            problems = [error.description]
        }
        var report = header
        if let output {
            do {
                try PrivateFile.write(Array(text.utf8), to: output)
            } catch {
                throw Failure.runtime("cannot write \(error)")
            }
            report.append("profile written to \(output)")
        } else {
            var bytes = Array(text.utf8)
            DescriptorOutput.writeAll(&bytes, to: STDOUT_FILENO)
        }
        let lines = (report + result.report.map { "- " + $0 }).map(TerminalText.escaped).joined(separator: "\n") + "\n"
        if output != nil {
            var bytes = Array(lines.utf8)
            DescriptorOutput.writeAll(&bytes, to: STDOUT_FILENO)
        } else {
            DescriptorOutput.writeError(lines)
        }
        if !problems.isEmpty {
            throw Failure.runtime(
                "the reconstructed profile does not load (a gattemu bug; please report it with the capture if you can):\n"
                    + problems.joined(separator: "\n"))
        }
    }
}

extension ReplicaProfile.Timing: ExpressibleByArgument {}
extension ReplicaProfile.Otherwise: ExpressibleByArgument {}
