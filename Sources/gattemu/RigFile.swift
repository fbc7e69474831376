import BlueZ
import Control
import FoundationEssentials
import Lexical
import Profile

/// A rig file (`gattemu run --rig FILE`): the devices of one process and, optionally, a scenario across them.
///
/// ```json
/// {
///   "devices": [
///     {"id": "lock", "profile": "noke-lock.json", "adapter": "hci1"},
///     {"id": "reader", "profile": "leaf-reader.json", "adapter": "hci2"}
///   ],
///   "faults": [{"device": "lock", "on": "start", "after": 5000, "disconnect": true}]
/// }
/// ```
/// A profile's path is relative to the rig file's folder; `id` defaults to the profile's file name. `faults` is a
/// rig scenario: each fault names its device (``RigScenario``).
///
/// A device may be a relayed real device instead of a profile: `{"id": "lock", "adapter": "hci1", "relay":
/// {"device": "F0:…", "upstreamAdapter": "hci3", …}}` takes `gattemu relay`'s options (``RelayEntry``).
struct RigFile {
    struct Entry {
        var id: String
        /// The profile's file (resolved against the rig file's folder); nil for a relay.
        var profile: String?
        var adapter: String
        /// A relayed device; nil for a profile.
        var relay: RelaySettings?

        /// The profile's file or the relayed device, for messages.
        var what: String { profile ?? relay.map { "the relay of \($0.device)" } ?? id }
    }

    var entries: [Entry]
    /// The scenario's faults, by device id.
    var faults: [String: [(path: String, node: JSONNode)]]

    /// Reads `path`; anything wrong is bad input (exit 2) with file:line:col and the JSON path.
    static func load(_ path: String) throws -> RigFile {
        let root = try readJSONFile(path, what: "rig file").root
        func bad(_ node: JSONNode, _ jsonPath: String, _ message: String) -> Failure {
            .badInput("\(node.location): \(jsonPath): \(message)")
        }
        guard case .object(let members) = root.value else { throw bad(root, "$", "a rig file is an object with \"devices\"") }
        for member in members where !["devices", "faults", "description", "$comment"].contains(member.key) {
            throw bad(member.value, member.key, "unknown key (a rig file has devices, faults, description)")
        }
        guard let devices = root["devices"], case .array(let items) = devices.value, !items.isEmpty else {
            throw bad(root["devices"] ?? root, "devices", "expected an array of devices, at least one")
        }
        let folder = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        var entries: [Entry] = []
        for (index, item) in items.enumerated() {
            let at = "devices[\(index)]"
            guard case .object(let fields) = item.value else { throw bad(item, at, "a device is an object with profile and adapter") }
            for field in fields where !["id", "profile", "relay", "adapter", "description", "$comment"].contains(field.key) {
                throw bad(field.value, "\(at).\(field.key)", "unknown key (a device has id, profile or relay, adapter)")
            }
            guard let adapter = item["adapter"]?.stringValue, ServedDevice.looksLikeAdapter(adapter) else {
                throw bad(item["adapter"] ?? item, "\(at).adapter", "the device's adapter: hciN or its address")
            }
            func resolved(_ path: String) -> String { path.hasPrefix("/") || folder.isEmpty ? path : folder + "/" + path }
            var id: String
            var entry: Entry
            switch (item["profile"], item["relay"]) {
            case (let profileNode?, nil):
                guard let profile = profileNode.stringValue, !profile.isEmpty else {
                    throw bad(profileNode, "\(at).profile", "the profile's file, relative to the rig file")
                }
                id = ControlDevices.id(forProfile: profile)
                entry = Entry(id: id, profile: resolved(profile), adapter: adapter)
            case (nil, let relayNode?):
                id = "relay"
                entry = Entry(
                    id: id, adapter: adapter,
                    relay: try RelayEntry.settings(relayNode, at: "\(at).relay", adapter: adapter, resolve: resolved))
            case (_?, _?):
                throw bad(item, at, "a device is a profile or a relay, not both")
            case (nil, nil):
                throw bad(item, "\(at).profile", "the profile's file, relative to the rig file (or \"relay\": a real device)")
            }
            if let given = item["id"] {
                guard let text = given.stringValue, ControlDevices.id(forProfile: text + ".json") == text else {
                    throw bad(given, "\(at).id", "letters, digits, '-', '_' and '.' only, at most 64")
                }
                id = text
            } else if entry.relay != nil {
                id = ServedDevice.distinct(entries.map(\.id) + [id]).last ?? id  // relay, relay-2, …
            }
            entry.id = id
            if let other = entries.first(where: { $0.id == id }) {
                throw bad(item, "\(at).id", "\"\(id)\" is already \(other.what)'s id: give each device its own")
            }
            if let other = entries.first(where: { $0.adapter == adapter }) {
                throw bad(item["adapter"] ?? item, "\(at).adapter", "adapter \(adapter) is already \(other.id)'s (one device per adapter)")
            }
            entries.append(entry)
        }
        // A relay reaches its device on an adapter no device of the rig is served on (a phone would find the
        // device's side; the mirror's adapter cannot be a central to the device at the same time).
        for (index, entry) in entries.enumerated() {
            guard let relay = entry.relay, let other = entries.first(where: { $0.adapter == relay.upstreamAdapter }) else { continue }
            let node = items[index]["relay"]?["upstreamAdapter"] ?? items[index]
            throw bad(
                node, "devices[\(index)].relay.upstreamAdapter",
                "adapter \(relay.upstreamAdapter) serves \(other.id): the relay needs an adapter of its own to reach the device")
        }
        var faults: [String: [(path: String, node: JSONNode)]] = [:]
        if let list = root["faults"] {
            faults = try RigScenario.split(list, path: "faults", devices: entries.map(\.id))
        }
        return RigFile(entries: entries, faults: faults)
    }
}

/// A scenario across a rig's devices: faults that each name their `device`, from a rig file's `faults` or a
/// `--scenario` file given to a rig (`[...]` or `{"faults": [...]}`).
enum RigScenario {
    /// Each device's faults (the `device` member taken out) with their JSON paths, checked for a device of `devices`.
    static func split(_ node: JSONNode, path: String, devices: [String]) throws -> [String: [(path: String, node: JSONNode)]] {
        var list = node
        if case .object = node.value, let faults = node["faults"] { list = faults }
        guard case .array(let items) = list.value else {
            throw Failure.badInput("\(list.location): \(path): expected an array of faults, each naming its \"device\"")
        }
        var split: [String: [(path: String, node: JSONNode)]] = [:]
        for (index, item) in items.enumerated() {
            guard case .object(let members) = item.value, let device = item["device"]?.stringValue else {
                throw Failure.badInput(
                    "\(item.location): \(path)[\(index)].device: each fault of a rig's scenario names its device (one of \(devices.joined(separator: ", ")))"
                )
            }
            guard devices.contains(device) else {
                throw Failure.badInput(
                    "\(item["device"]?.location ?? item.location): \(path)[\(index)].device: no device \"\(device)\" (the rig has \(devices.joined(separator: ", ")))"
                )
            }
            split[device, default: []].append(
                ("\(path)[\(index)]", JSONNode(.object(members.filter { $0.key != "device" }), at: item.location)))
        }
        return split
    }

    /// `file`'s faults for each device, decoded and checked against the device's profile.
    static func load(_ file: String, devices: [ServedDevice]) throws -> [String: [FaultSpec]] {
        let root = try readJSONFile(file, what: "scenario").root
        return try decode(split(root, path: "faults", devices: devices.map(\.id)), file: file, devices: devices)
    }

    /// The faults of each device decoded (a fault that cannot be is bad input, located).
    static func decode(_ nodes: [String: [(path: String, node: JSONNode)]], file: String, devices: [ServedDevice]) throws -> [String:
        [FaultSpec]]
    {
        var specs: [String: [FaultSpec]] = [:]
        for device in devices {
            for (path, node) in nodes[device.id] ?? [] {
                let spec: FaultSpec
                do {
                    spec = try FaultSpecDecoder.spec(node, path: path)
                } catch {
                    throw Failure.badInput((error.location.map { "\($0): " } ?? "\(file): ") + error.description)
                }
                if let problem = device.profile.problem(with: spec) {
                    throw Failure.badInput("\(node.location): \(path) (device \(device.id)).\(problem.description)")
                }
                specs[device.id, default: []].append(spec)
            }
        }
        return specs
    }
}

/// A rig file's `relay`: `gattemu relay`'s options as JSON members, named as the options are (camelCase).
enum RelayEntry {
    static let keys = [
        "device", "upstreamAdapter", "output", "capture", "address", "scanTimeout", "devicePasskey", "devicePairing",
        "onPhoneDisconnect", "description", "$comment",
    ]

    static func settings(_ node: JSONNode, at path: String, adapter: String, resolve: (String) -> String) throws -> RelaySettings {
        func bad(_ node: JSONNode, _ member: String, _ message: String) -> Failure {
            .badInput("\(node.location): \(path)\(member.isEmpty ? "" : ".\(member)"): \(message)")
        }
        guard case .object(let members) = node.value else {
            throw bad(node, "", "a relay is an object with device and upstreamAdapter (gattemu relay's options)")
        }
        for member in members where !keys.contains(member.key) {
            throw bad(member.value, member.key, "unknown key (a relay has \(keys.dropLast(2).joined(separator: ", ")))")
        }
        guard let text = node["device"]?.stringValue, let device = DeviceQuery(parsing: text) else {
            throw bad(node["device"] ?? node, "device", "the device: its address, its advertised name, or NAME* for a name prefix")
        }
        guard let upstream = node["upstreamAdapter"]?.stringValue, ServedDevice.looksLikeAdapter(upstream) else {
            throw bad(node["upstreamAdapter"] ?? node, "upstreamAdapter", "the adapter that connects to the device: hciN or its address")
        }
        guard upstream != adapter else {
            throw bad(node["upstreamAdapter"] ?? node, "upstreamAdapter", "the mirror's adapter: the device needs another")
        }
        var settings = RelaySettings(device: device, adapter: adapter, upstreamAdapter: upstream)
        func string(_ key: String) throws -> String? {
            guard let member = node[key] else { return nil }
            guard let text = member.stringValue, !text.isEmpty else { throw bad(member, key, "expected a non-empty string") }
            return text
        }
        func choice<Choice: RawRepresentable & CaseIterable>(_ key: String, _: Choice.Type) throws -> Choice?
        where Choice.RawValue == String {
            guard let text = try string(key) else { return nil }
            guard let value = Choice(rawValue: text) else {
                throw bad(node[key] ?? node, key, "one of \(Choice.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return value
        }
        settings.output = try string("output").map(resolve)
        settings.capture = try string("capture").map(resolve)
        if let address = try choice("address", RelayCommand.AddressMode.self) { settings.address = address }
        if let member = node["scanTimeout"] {
            guard let seconds = member.doubleValue, RelaySettings.acceptsScanTimeout(seconds) else {
                throw bad(member, "scanTimeout", "seconds: more than 0, at most 600")
            }
            settings.scanTimeout = seconds
        }
        if let text = try string("devicePasskey") {
            guard let passkey = StrictParse.passkey(text) else {
                throw bad(node["devicePasskey"] ?? node, "devicePasskey", "six decimal digits")
            }
            settings.pairing.passkey = passkey
        }
        if let mode = try choice("devicePairing", RelayCommand.DevicePairingMode.self) { settings.pairing.accept = mode == .accept }
        if let mode = try choice("onPhoneDisconnect", RelayCommand.PhoneDisconnect.self) {
            settings.reconnectWhenPhonesLeave = mode == .reconnect
        }
        return settings
    }
}
