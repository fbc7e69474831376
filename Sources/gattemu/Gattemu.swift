import ArgumentParser
import Emulator

#if canImport(Glibc)
    import Glibc
#endif

/// Emulates Bluetooth LE peripherals described by JSON profiles, on BlueZ.
@main
struct Gattemu: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gattemu",
        abstract: "Make a BlueZ machine be a Bluetooth LE peripheral described by a JSON profile.",
        version: Version.current,
        subcommands: [Run.self, RelayCommand.self, Validate.self, Import.self, Clone.self, Adapters.self, Ctl.self, Report.self]
    )

    /// Parses and runs; bad command lines exit 2 (not ArgumentParser's 64), runtime failures 1.
    static func main() async {
        // A reader that goes away (`gattemu run | head`) must not kill gattemu mid-shutdown: writes to it
        // fail with EPIPE instead, and the log drops what it cannot write.
        signal(SIGPIPE, SIG_IGN)
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let failure as Failure {
            DescriptorOutput.writeError("gattemu: \(failure.message)\n")
            Glibc.exit(failure.code)
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                exit(withError: error)
            }
            if error is ExitCode {
                Glibc.exit(code.rawValue)
            }
            DescriptorOutput.writeError(fullMessage(for: error) + "\n")
            // ArgumentParser reports a bad command line as a validation failure; anything else failed at run time.
            Glibc.exit(code == .validationFailure ? Failure.badInput : Failure.runtime)
        }
    }
}

/// An error that ends the program with a one-line reason and an exit code.
struct Failure: Error {
    static let runtime: Int32 = 1
    static let badInput: Int32 = 2

    var message: String
    var code: Int32

    static func runtime(_ message: String) -> Failure { Failure(message: message, code: runtime) }
    static func badInput(_ message: String) -> Failure { Failure(message: message, code: badInput) }

    /// The same failure, its reason prefixed (a rig's device id).
    func prefixed(_ prefix: String) -> Failure { Failure(message: prefix + message, code: code) }
}
