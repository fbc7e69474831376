import ControlContract
import Emulator
import Synchronization

/// The devices the control API drives: the one device of `gattemu run PROFILE`, or each device of a rig
/// (`gattemu run A@hci0 B@hci1`), with the state the runtime last gave each. All share one event log.
///
/// With one device, every route about a device answers at its own path (`/v1/status`) as well as under
/// `/v1/devices/{id}/`; with several, only there (409 at the own path, naming the devices), but for the event log
/// and stream, which carry every device's events, each with its `device`.
public final class ControlDevices: Sendable {
    public struct Device: Sendable {
        public let id: String
        public let profile: String
        /// The adapter asked for (nil: the first one).
        public let adapter: String?
        public let target: any ControlTarget

        public init(id: String, profile: String, adapter: String?, target: any ControlTarget) {
            self.id = id
            self.profile = profile
            self.adapter = adapter
            self.target = target
        }
    }

    public let devices: [Device]
    /// The log every device records into.
    public let events: EventLog
    private let states: Mutex<[String: (DeviceEntry.State, String?)]>

    /// `devices` have distinct ids (a rig's names); at least one.
    public init(_ devices: [Device], events: EventLog) {
        precondition(!devices.isEmpty && Set(devices.map(\.id)).count == devices.count, "one or more devices, distinct ids")
        self.devices = devices
        self.events = events
        states = Mutex(Dictionary(uniqueKeysWithValues: devices.map { ($0.id, (DeviceEntry.State.starting, nil)) }))
    }

    /// One device, `id` in `/v1/devices/{id}/…`.
    public convenience init(id: String, profile: String, adapter: String?, target: any ControlTarget) {
        self.init([Device(id: id, profile: profile, adapter: adapter, target: target)], events: target.events)
    }

    /// A device's id from its profile's file name: `profiles/noke-lock.json` → `noke-lock`; letters, digits, `-`,
    /// `_` and `.` kept, anything else `_`, at most 64 characters ("device" when nothing is left).
    public static func id(forProfile file: String) -> String {
        let name = file.split(separator: "/").last.map(String.init) ?? file
        let stem = name.hasSuffix(".json") ? String(name.dropLast(5)) : name
        let kept = String(
            String.UnicodeScalarView(
                stem.unicodeScalars.prefix(64).map { scalar in
                    scalar.isASCII
                        && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "-_.".unicodeScalars.contains(scalar))
                        ? scalar : "_"
                }))
        return kept.isEmpty || kept.allSatisfy({ $0 == "." }) ? "device" : kept
    }

    /// The runtime's word on a device: started, failed (why), stopped.
    public func set(_ id: String, _ state: DeviceEntry.State, reason: String? = nil) {
        states.withLock { $0[id] = (state, reason) }
    }

    public func state(of id: String) -> DeviceEntry.State? { states.withLock { $0[id]?.0 } }

    public func device(_ id: String) -> Device? { devices.first { $0.id == id } }

    /// The device the own paths are about: the only one; nil in a rig.
    public var single: Device? { devices.count == 1 ? devices[0] : nil }

    /// `GET /v1/devices`.
    public func list() async -> DeviceList {
        var entries: [DeviceEntry] = []
        for device in devices {
            let (state, reason) = states.withLock { $0[device.id] ?? (.starting, nil) }
            var entry = DeviceEntry(id: device.id, profile: device.profile, adapter: device.adapter, state: state, reason: reason)
            if state == .running, let adapter = await device.target.status().adapter {
                entry.adapterName = adapter.name
                entry.address = adapter.address.map { "\($0)" }
            }
            entries.append(entry)
        }
        return DeviceList(devices: entries)
    }
}
