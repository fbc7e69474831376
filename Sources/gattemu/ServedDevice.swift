import BlueZ
import Bluetooth
import Control
import Profile

/// One device a `gattemu run` serves: its id in the control API and the event log, its profile, its adapter.
struct ServedDevice: Sendable {
    var id: String
    var profile: DeviceProfile
    /// `hciN` or an address; nil: the first adapter.
    var adapter: String?
    /// A rig scenario's faults for this device (a rig file's `faults`), installed with the profile's.
    var faults: [FaultSpec] = []
    /// A relay's device, connected: the device answers, `profile` is its mirror (`gattemu relay`, a rig's `relay`).
    var relay: RelayedDevice? = nil

    /// `PROFILE@ADAPTER` (the last `@` followed by `hciN` or an address) or `PROFILE`.
    static func split(_ argument: String) -> (profile: String, adapter: String?) {
        guard let at = argument.lastIndex(of: "@") else { return (argument, nil) }
        let adapter = String(argument[argument.index(after: at)...])
        guard Self.looksLikeAdapter(adapter) else { return (argument, nil) }
        return (String(argument[..<at]), adapter)
    }

    /// `hciN` or an address.
    static func looksLikeAdapter(_ text: String) -> Bool {
        ControllerManagement(adapterName: text) != nil || BluetoothAddress(text) != nil
    }

    /// Distinct ids for `ids` in order: a repeated one gets `-2`, `-3`, …
    static func distinct(_ ids: [String]) -> [String] {
        var taken = Set<String>()
        return ids.map { id in
            var candidate = id
            var next = 2
            while taken.contains(candidate) {
                candidate = "\(id)-\(next)"
                next += 1
            }
            taken.insert(candidate)
            return candidate
        }
    }
}
