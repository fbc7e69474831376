import ArgumentParser
import BlueZ
import FoundationEssentials

/// List the Bluetooth adapters bluetoothd knows, with what they can do for advertising.
struct Adapters: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "adapters", abstract: "List adapters: address, power, advertising instances, supported includes.")

    func run() async throws {
        let stack: BlueZStack
        do {
            stack = try await BlueZStack.connect()
        } catch {
            throw Failure.runtime(error.description)
        }
        do {
            let adapters = try await stack.adapters()
            if adapters.isEmpty { print("no adapters") }
            for adapter in adapters {
                let instances = adapter.supportedInstances.map { "\($0) free advertising instances" } ?? "no LE advertising"
                print(
                    "\(adapter.name)  \(adapter.address)  \(adapter.powered ? "powered" : "off")  \(instances)  includes: \(adapter.supportedIncludes.joined(separator: ",").isEmpty ? "-" : adapter.supportedIncludes.joined(separator: ","))  alias \"\(adapter.alias)\""
                )
            }
        } catch {
            await stack.close()
            throw Failure.runtime(error.description)
        }
        await stack.close()
    }
}
