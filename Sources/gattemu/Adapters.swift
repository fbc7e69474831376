import ArgumentParser
import BlueZ
import FoundationEssentials
import TextEscaping

/// List the Bluetooth adapters bluetoothd knows, with what they can do for advertising. What bluetoothd says is
/// escaped for the terminal (``TerminalText``): any local user may set an adapter's alias, and `gattemu relay` copies a
/// real device's name into one.
struct Adapters: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "adapters", abstract: "List adapters: address, power, advertising instances, supported includes.")

    func run() async throws {
        let stack: BlueZStack
        do {
            stack = try await BlueZStack.connect(bus: .ofThisCommand)
        } catch {
            throw Failure.runtime(error.description)
        }
        do {
            let adapters = try await stack.adapters()
            if adapters.isEmpty { print("no adapters") }
            for adapter in adapters {
                let instances = adapter.supportedInstances.map { "\($0) free advertising instances" } ?? "no LE advertising"
                let includes = adapter.supportedIncludes.joined(separator: ",")
                print(
                    TerminalText.escaped(
                        "\(adapter.name)  \(adapter.address)  \(adapter.powered ? "powered" : "off")  \(instances)  includes: \(includes.isEmpty ? "-" : includes)  alias \"\(adapter.alias)\""
                    ))
            }
        } catch {
            await stack.close()
            throw Failure.runtime(error.description)
        }
        await stack.close()
    }
}
