import ArgumentParser
import ControlContract

/// `gattemu ctl address random|original`: the device comes back under another address.
struct CtlAddress: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "address", abstract: "Have the device show a new address (a device back from a factory reset), or its own again.",
        discussion: """
            random: the adapter shows resolvable private addresses of a fresh key, which no central seen before can \
            resolve; original: its own address. The adapter is powered off for the change (connected centrals are \
            disconnected) and on again. Needs gattemu to run as root (CAP_NET_ADMIN). gattemu gives the adapter its \
            own address back when it stops.
            """)
    @OptionGroup var options: CtlOptions
    @Argument(help: "random or original.") var address: String

    func validate() throws {
        guard address == "random" || address == "original" else { throw ValidationError("expected random or original") }
    }

    func run() async throws {
        let (result, json) = try await options.client().call(
            .PUT, "/v1/adapter/address", body: AddressBody(address: address), as: AddressChanged.self)
        options.output(json) {
            result.irk.map { "\(result.adapter) shows resolvable private addresses of key \($0) (identity \(result.identity))" }
                ?? "\(result.adapter) shows its own address \(result.identity)"
        }
    }
}
