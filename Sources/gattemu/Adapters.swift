import ArgumentParser
import BlueZ
import FoundationEssentials
import TextEscaping

/// List the Bluetooth adapters bluetoothd knows, with what they can do for advertising. What bluetoothd says is
/// escaped for the terminal (``TerminalText``): any local user may set an adapter's alias, and `gattemu relay` copies a
/// real device's name into one.
struct Adapters: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "adapters",
        abstract: "List adapters: address, power, advertising instances, supported includes, extended advertising.")

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
                        "\(adapter.name)  \(adapter.address)  \(adapter.powered ? "powered" : "off")  \(instances)  includes: \(includes.isEmpty ? "-" : includes)  \(Self.extended(adapter.advertising))  alias \"\(adapter.alias)\""
                    ))
            }
        } catch {
            await stack.close()
            throw Failure.runtime(error.description)
        }
        await stack.close()
    }

    /// `extended: 1M,2M,Coded, 251/251 bytes, tx -127..20 dBm` or `extended: no` (a Bluetooth 4 controller).
    static func extended(_ capabilities: AdvertisingCapabilities) -> String {
        guard !capabilities.secondaryChannels.isEmpty else { return "extended: no" }
        var parts = [capabilities.secondaryChannels.joined(separator: ",")]
        if let data = capabilities.maxAdvertisingDataLength, let scan = capabilities.maxScanResponseLength {
            parts.append("\(data)/\(scan) bytes")
        }
        if capabilities.canSetTxPower, let low = capabilities.minTxPower, let high = capabilities.maxTxPower {
            parts.append("tx \(low)..\(high) dBm")
        }
        return "extended: " + parts.joined(separator: ", ")
    }
}
