import Control
import FoundationEssentials
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
struct RigFile {
    struct Entry {
        var id: String
        var profile: String
        var adapter: String
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
            for field in fields where !["id", "profile", "adapter", "description", "$comment"].contains(field.key) {
                throw bad(field.value, "\(at).\(field.key)", "unknown key (a device has id, profile, adapter)")
            }
            guard let profile = item["profile"]?.stringValue, !profile.isEmpty else {
                throw bad(item["profile"] ?? item, "\(at).profile", "the profile's file, relative to the rig file")
            }
            guard let adapter = item["adapter"]?.stringValue, ServedDevice.looksLikeAdapter(adapter) else {
                throw bad(item["adapter"] ?? item, "\(at).adapter", "the device's adapter: hciN or its address")
            }
            let resolved = profile.hasPrefix("/") || folder.isEmpty ? profile : folder + "/" + profile
            var id = ControlDevices.id(forProfile: profile)
            if let given = item["id"] {
                guard let text = given.stringValue, ControlDevices.id(forProfile: text + ".json") == text else {
                    throw bad(given, "\(at).id", "letters, digits, '-', '_' and '.' only, at most 64")
                }
                id = text
            }
            if let other = entries.first(where: { $0.id == id }) {
                throw bad(item, "\(at).id", "\"\(id)\" is already \(other.profile)'s id: give each device its own")
            }
            if let other = entries.first(where: { $0.adapter == adapter }) {
                throw bad(item["adapter"] ?? item, "\(at).adapter", "adapter \(adapter) is already \(other.id)'s (one device per adapter)")
            }
            entries.append(Entry(id: id, profile: resolved, adapter: adapter))
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
