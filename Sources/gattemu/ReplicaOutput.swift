import ArgumentParser
import Emulator
import FoundationEssentials
import Profile
import Replica
import TextEscaping

#if canImport(Glibc)
    import Glibc
#endif

/// Delivering a reconstructed profile (`import`, `clone`): checked as `gattemu run` would load it, written
/// atomically to `-o` (or to standard output), and the report after it.
enum ReplicaOutput {
    /// Bad input (exit 2) unless `path` can be written: its directory exists and is writable, and the path is
    /// not something other than a regular file.
    static func checkWritable(_ path: String) throws {
        var info = stat()
        if lstat(path, &info) == 0, info.st_mode & S_IFMT != S_IFREG {
            throw Failure.badInput("-o \(path): exists and is not a regular file")
        }
        let directory = path.contains("/") ? String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]) : "."
        if access(directory.isEmpty ? "/" : directory, W_OK) != 0 {
            throw Failure.badInput("-o \(path): cannot write in \(directory.isEmpty ? "/" : directory)")
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
                try Data(text.utf8).write(to: URL(filePath: output), options: .atomic)
            } catch {
                throw Failure.runtime("cannot write \(output): \(error)")
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
