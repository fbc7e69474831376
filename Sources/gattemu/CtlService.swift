import ArgumentParser
import ControlContract

/// `gattemu ctl service ID --add|--remove`: changes the GATT table while centrals are connected.
struct CtlService: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "service", abstract: "Add a service of the profile to the GATT table or remove it (Service Changed).",
        discussion:
            "A service the profile marks \"present\": false is added with --add. bluetoothd tells connected centrals that enabled Service Changed indications, and bonded ones when they reconnect."
    )
    @OptionGroup var options: CtlOptions
    @Argument(help: "Service id from the profile.") var id: String
    @Flag(help: "Add it.") var add = false
    @Flag(help: "Remove it.") var remove = false

    func validate() throws {
        if add == remove { throw ValidationError("give --add or --remove") }
    }

    func run() async throws {
        let (result, json) = try await options.client().call(
            .PUT, "/v1/services/\(CtlFormat.escape(id))", body: ServiceBody(present: add), as: ServiceResult.self)
        options.output(json) {
            "\(id) \(result.present ? "present" : "absent")" + (result.changed ? " (Service Changed)" : " (already so)")
        }
    }
}
