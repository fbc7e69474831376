import ArgumentParser
import BlueZ
import Bluetooth
import CaptureExport
import Control
import DBus
import Emulator
import FoundationEssentials
import Lexical
import Profile
import Relay
import Replica
import TextEscaping

#if canImport(Glibc)
    import Glibc
#endif

/// Stand between a phone and a real device: connect to the device as a central on one adapter, offer its mirror
/// on another, forward every operation both ways, and record the session as a profile.
struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Mirror a real device on one adapter while connected to it on another; forward, fault and record.",
        discussion: """
            DEVICE is an address (AA:BB:CC:DD:EE:FF), an advertised name (exactly), or NAME* for a name prefix. The relay \
            connects to it on --upstream-adapter first (so that a phone finds only the mirror), walks its GATT table, \
            then advertises the same advertisement, name and table on --adapter and forwards reads, writes, \
            subscriptions, notifications and indications, and the device's ATT errors. Faults (--scenario, the control \
            API) act on relayed operations as on an emulated device. When the device drops, the mirror's centrals are \
            disconnected and the relay attaches again when the device is back. On exit, -o writes the session as a \
            profile (table, values, the conversation as replay rules) and --capture as a btsnoop file. Exit 0 on \
            SIGINT/SIGTERM, 1 when the device cannot be reached, 2 for bad input. See docs/relay.md.
            """)

    @Argument(help: ArgumentHelp("The device: its address, its advertised name, or NAME* for a name prefix.", valueName: "address|name"))
    var device: String

    @Option(help: "Adapter the mirror advertises on (the phone's side): hciN or its address.")
    var adapter: String

    @Option(help: "Adapter that connects to the device (the device's side): hciN or its address.")
    var upstreamAdapter: String

    @Option(
        name: .shortAndLong, help: ArgumentHelp("On exit, write the session as a profile to this file.", valueName: "profile"))
    var output: String?

    @Option(help: ArgumentHelp("On exit, write the relayed ATT traffic as a btsnoop capture to this file.", valueName: "file"))
    var capture: String?

    @Option(
        help:
            "Address the mirror shows: own (the mirror adapter's, default) or device (the device's; needs a controller that can set its public address)."
    )
    var address: AddressMode = .own

    @Option(help: ArgumentHelp("Give up when the device has not been seen within this many seconds.", valueName: "seconds"))
    var scanTimeout: Double = 20

    @Option(
        help: ArgumentHelp(
            "The passkey the device displays when the relay pairs with it (six digits); without it, the control API's prompt (GET/POST /v1/pairing) asks.",
            valueName: "passkey"))
    var devicePasskey: String?

    @Option(help: "Whether the relay pairs with the device when it asks for security: accept (default) or refuse.")
    var devicePairing: DevicePairingMode = .accept

    @Option(
        help:
            "When the last phone disconnects from the mirror: keep the device's link (default), or reconnect it at once so that each phone session meets a freshly connected device."
    )
    var onPhoneDisconnect: PhoneDisconnect = .keep

    @OptionGroup var serving: ServingOptions

    enum AddressMode: String, ExpressibleByArgument, CaseIterable {
        case own, device
    }

    enum DevicePairingMode: String, ExpressibleByArgument, CaseIterable {
        case accept, refuse
    }

    enum PhoneDisconnect: String, ExpressibleByArgument, CaseIterable {
        case keep, reconnect
    }

    func validate() throws {
        guard DeviceQuery(parsing: device) != nil else {
            throw ValidationError("\(device.isEmpty ? "an empty name" : "\"\(device)\""): not an address nor a name")
        }
        if let devicePasskey, StrictParse.passkey(devicePasskey) == nil {
            throw ValidationError("--device-passkey: six decimal digits, not \"\(TerminalText.escaped(devicePasskey))\"")
        }
    }

    /// How the relay answers the device's pairing.
    var pairingSettings: DevicePairing {
        DevicePairing(passkey: devicePasskey.flatMap(StrictParse.passkey), accept: devicePairing == .accept)
    }

    /// The relay these options describe.
    var settings: RelaySettings? {
        DeviceQuery(parsing: device).map {
            RelaySettings(
                device: $0, adapter: adapter, upstreamAdapter: upstreamAdapter, output: output, capture: capture, address: address,
                scanTimeout: scanTimeout, pairing: pairingSettings, reconnectWhenPhonesLeave: onPhoneDisconnect == .reconnect)
        }
    }

    func run() async throws {
        guard let settings else { throw Failure.badInput("\"\(device)\": not an address nor a name") }
        try settings.check()
        // One thread for both legs: the device's notifications are read where the mirror sends them, and a phone's
        // write reaches the device's connection without a thread hop.
        let loop: DBusEventLoop
        do {
            loop = try DBusEventLoop(name: "gattemu d-bus")
        } catch {
            throw Failure.runtime("\(error)")
        }
        let say: @Sendable (String) -> Void = { line in DescriptorOutput.writeError("gattemu: relay: \(TerminalText.escaped(line))\n") }
        let relayed = try await settings.start(on: loop, say: say)
        let device = ServedDevice(
            id: ControlDevices.id(forProfile: relayed.profile.file), profile: relayed.profile, adapter: relayed.adapter, relay: relayed)
        do {
            try await serving.serve([device], loop: loop)
        } catch {
            try? await relayed.finish(failed: true)
            throw error
        }
        try await relayed.finish()
    }
}

/// What `--address` does to the mirror's controller: `own` leaves its address (and says so in the event log);
/// `device` gives it the device's public address before the mirror starts and its own back on exit
/// (docs/relay.md).
struct MirrorAddress {
    let mode: RelayCommand.AddressMode
    /// The adapter the mirror serves on: the kernel may announce a controller under another index after the change.
    private(set) var adapter: String
    /// The mirror controller's own address, to put back; set while it shows the device's.
    private(set) var original: BluetoothAddress?
    /// The event log's note on the address the phone sees.
    private(set) var note = ""

    /// Before the device is reached: with `device`, refuses (exit 1) a controller that cannot set its public address.
    static func prepare(_ mode: RelayCommand.AddressMode, adapter: String, stack: BlueZStack) async throws -> MirrorAddress {
        let named: Adapter
        do {
            named = try await stack.adapter(adapter)
        } catch {
            throw Failure.runtime(error.description)
        }
        if mode == .device {
            do {
                guard try await ControllerManagement.named(named.name).configuration().supportsPublicAddress else {
                    throw Failure.runtime(
                        "--address device: \(named.name) cannot take the device's address: the kernel offers no public-address "
                            + "configuration for this controller (use one whose driver can set it, or --address own)")
                }
            } catch let error as ManagementError {
                throw Failure.runtime("--address device: \(error.description)")
            }
        }
        return MirrorAddress(
            mode: mode, adapter: named.name, note: "relay: the mirror advertises from \(named.name)'s own address \(named.address)")
    }

    /// Once the device is known: with `device`, the mirror's controller takes its public address; a random (static)
    /// one cannot be a public address, so that is refused (exit 1). With `own`, only the note.
    mutating func take(_ device: RemoteDevice, stack: BlueZStack) async throws {
        let properties = device.properties
        guard mode == .device else {
            note +=
                ", not the device's \(device.label): apps that check the address (a Noke name embeds it; some put it in "
                + "manufacturer data) will not take it for the device (--address device)"
            return
        }
        guard let address = properties.address, properties.addressType == .public else {
            throw Failure.runtime(
                "--address device: \(device.label) has a \(properties.addressType?.description ?? "unknown") address type: a controller's "
                    + "public address cannot take it (the phone would see a public address, not the device's random one); use --address own"
            )
        }
        let before: Adapter
        let after: Adapter
        do {
            before = try await stack.adapter(adapter)
            after = try await stack.changePublicAddress(of: adapter, to: address)
        } catch let error as ManagementError {
            throw Failure.runtime("--address device: \(error.description)")
        } catch {
            throw Failure.runtime("--address device: \(error)")
        }
        if before.address != address { original = before.address }
        adapter = after.name
        note =
            "relay: the mirror advertises from the device's own address \(address) on \(after.name) (its own, \(before.address), back on exit)"
    }

    /// On exit: the mirror's controller gets its own address back.
    mutating func restore(stack: BlueZStack) async throws {
        guard let original else { return }
        do {
            adapter = try await stack.changePublicAddress(of: adapter, to: original).name
            self.original = nil
        } catch {
            throw Failure.runtime("--address device: \(adapter) keeps the device's address: \(error.description)")
        }
    }
}
