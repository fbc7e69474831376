import ArgumentParser
import ControlContract

/// `gattemu ctl address random|original|C0:…`: the device comes back under another address.
struct CtlAddress: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "address", abstract: "Give the adapter a new random static address (a device back from a factory reset).",
        discussion: """
            The adapter is powered off for the change (connected centrals are disconnected) and on again; \
            advertisements and the device name follow the new address. Needs gattemu to run as root (CAP_NET_ADMIN) \
            on an LE-only controller. gattemu gives the adapter its own address back when it stops.
            """)
    @OptionGroup var options: CtlOptions
    @Argument(help: "random, original, or a random static address (first digit C–F, e.g. C0:11:22:33:44:55).") var address: String

    func validate() throws {
        guard address == "random" || address == "original" || StrictParse.isStaticAddress(address) else {
            throw ValidationError("expected random, original or a random static address such as C0:11:22:33:44:55")
        }
    }

    func run() async throws {
        let (result, json) = try await options.client().call(.PUT, "/v1/adapter/address", body: AddressBody(address: address), as: AddressChanged.self)
        options.output(json) { "\(result.adapter) now at \(result.address)" + (result.randomStatic ? " (random static)" : " (its own address)") + ", was \(result.previous)" }
    }
}
