import Bluetooth
import JSON

/// Turns a ``DeviceReplica`` into an ordinary gattemu profile (JSON text) that replays what the device did.
///
/// The GATT table, values and advertisement come over as they were seen; each write the central made and
/// the notifications the device sent before the next write become replay rules. The result validates like
/// a hand-written profile and can be edited or `extends`-ed; ``Result/report`` says what was made and what
/// was missing.
public struct ReplicaProfile: Sendable {
    /// How the recorded gaps between a write and the notifications after it are replayed.
    public enum Timing: String, Sendable, CaseIterable {
        /// The same gaps as recorded (`delay` actions).
        case recorded
        /// As fast as possible.
        case immediate
    }

    /// What happens with a write the recording does not have.
    public enum Otherwise: String, Sendable, CaseIterable {
        /// Accepted (answered with success) and logged.
        case ignore
        /// Answered with an ATT error (Unlikely Error) when the central waits for an answer, and logged.
        case error
        /// Answered as the recorded write closest to it (byte by byte) was.
        case nearest
    }

    public struct Options: Sendable {
        public var timing: Timing = .immediate
        public var otherwise: Otherwise = .ignore
        /// Pin ATT handles so that a phone's cached handles keep working (where BlueZ can give them).
        public var pinHandles = true
        /// At most this many rules; the rest of the conversation is left out (and reported).
        public var maximumRules = 2_000
        /// At most this many notifications replayed for one write (a device streaming live data between the
        /// app's commands sends hundreds).
        public var maximumNotificationsPerRule = 4_096
        /// The most bytes of an SDU a rule matches or sends: a profile value's (`ProfileLimits.valueLength`, a test
        /// holds them equal).
        public var maximumSDUBytes = 4_096
        /// At most this much profile text for replayed notifications altogether (values as hex, with their
        /// JSON), so that the profile stays under the 16 MiB a profile may have; later ones are left out.
        public var maximumNotificationText = 12 << 20

        public init() {}
    }

    /// The profile text and the report.
    public struct Result: Sendable {
        public var json: JSONNode
        /// One line each: what was reconstructed, what was missing, what replay cannot do.
        public var report: [String]

        public var text: String { json.profileText() + "\n" }
    }

    public let replica: DeviceReplica
    public let options: Options

    public init(_ replica: DeviceReplica, options: Options = Options()) {
        self.replica = replica
        self.options = options
    }

    public func build() -> Result {
        var builder = Builder(replica: replica, options: options)
        return builder.build()
    }
}

/// The work of ``ReplicaProfile/build()``.
struct Builder {
    let replica: DeviceReplica
    let options: ReplicaProfile.Options
    var report: [String] = []
    var ids = IdentifierTable()
    /// Profile id of the characteristic at each value handle.
    var characteristicIDs: [AttributeHandle: String] = [:]
    var properties: [AttributeHandle: CharacteristicProperties] = [:]
    var state: [(String, JSONNode)] = []
    var triggers: [(String, JSONNode)] = []
    var rules: [JSONNode] = []
    var droppedRules = 0
    /// Profile text still available for notifications (``ReplicaProfile/Options/maximumNotificationText``).
    var notificationText: Int
    var droppedNotifications = 0
    /// Whether the advertisement built carries the appearance (``buildAdvertisement()``).
    var advertisesAppearance = false

    /// How the device was seen sending on each value handle, whatever its declaration said.
    let observed: [AttributeHandle: CharacteristicProperties]
    /// The handles the central wrote to (``hasWrites(to:)``), found in one pass over the conversation.
    let written: Set<AttributeHandle>

    init(replica: DeviceReplica, options: ReplicaProfile.Options) {
        self.replica = replica
        self.options = options
        self.notificationText = options.maximumNotificationText
        var observed: [AttributeHandle: CharacteristicProperties] = [:]
        var written: Set<AttributeHandle> = []
        for event in replica.conversation {
            switch event.kind {
            case .notification(let handle, _, let indication): observed[handle, default: []].insert(indication ? .indicate : .notify)
            case .write(let handle, _, _): written.insert(handle)
            default: continue
            }
        }
        self.observed = observed
        self.written = written
    }

    mutating func build() -> ReplicaProfile.Result {
        var top: [(String, JSONNode)] = [("format", .int(1))]
        top.append(
            (
                "description",
                .string(
                    "Reconstructed by gattemu from \(replica.source)"
                        + (replica.address.map { " — device \($0)" + (replica.addressType.map { " (\($0))" } ?? "") } ?? "")
                        + (replica.name.map { " \"\($0)\"" } ?? ""))
            ))
        let services = buildServices()
        let advertisement = buildAdvertisement()
        var device: [(String, JSONNode)] = []
        if let name = replica.name { device.append(("name", .string(Self.textTemplate(name)))) }
        if let appearance = gapAppearance ?? replica.advertisingData?.appearance ?? replica.scanResponse?.appearance {
            let text = "0x" + Hex.string([UInt8(appearance >> 8), UInt8(appearance & 0xFF)]).uppercased()
            // gattemu advertises `device.appearance` wherever an advertisement sets none: an appearance the device
            // did not advertise (read from its GAP service, as BlueZ 5.82 lets a central), or one that did not fit,
            // would make the replica advertise more than the device did, or more than 31 bytes.
            if advertisement == nil || advertisesAppearance {
                device.append(("appearance", .string(text)))
            } else {
                report.append(
                    "device: appearance \(text) (from \(gapAppearance != nil ? "the GAP service" : "the advertisement")) left out: "
                        + "gattemu would advertise it, and the device's advertisement does not carry it")
            }
        }
        if !device.isEmpty { top.append(("device", .object(device))) }
        if let security = buildSecurity() { top.append(("security", .object(security))) }
        buildRules()
        let channels = buildChannels()

        if !state.isEmpty { top.append(("state", .object(state))) }
        if !triggers.isEmpty { top.append(("triggers", .object(triggers))) }
        if let advertisement { top.append(("advertisements", .array([advertisement]))) }
        top.append(("services", .array(services)))
        if !channels.isEmpty { top.append(("channels", .array(channels))) }
        if !rules.isEmpty { top.append(("rules", .array(rules))) }
        if droppedRules > 0 {
            report.append("left out \(droppedRules) rules past the limit of \(options.maximumRules)")
        }
        if droppedNotifications > 0 {
            report.append(
                "left out \(droppedNotifications) notifications that do not fit in a profile (16 MiB): the conversation's later answers are cut"
            )
        }
        if let mtu = replica.mtu {
            report.append("the central negotiated ATT MTU \(mtu); BlueZ negotiates it again with each central (not set by a profile)")
        }
        return ReplicaProfile.Result(json: .object(top), report: replica.notes + report)
    }

    // MARK: Security

    /// The `security` section for what was seen: the device's IO capability from its pairing response, and
    /// `pairing: refuse` when it answered pairing with Pairing Failed. Nil when no pairing was seen.
    func buildSecurity() -> [(String, JSONNode)]? {
        let seen = replica.security
        guard seen.pairingSeen || seen.refusedWith != nil else { return nil }
        var section: [(String, JSONNode)] = []
        var said: [String] = []
        if let raw = seen.ioCapability, let name = IOCapability(rawValue: raw).name {
            section.append(("io", .string(name)))
            said.append("IO capability \(name) from the device's pairing response")
        }
        if let refused = seen.refusedWith {
            section.append(("pairing", .string("refuse")))
            said.append("the device refused pairing (reason 0x\(Hex.byte(refused)))")
        }
        if said.isEmpty { said.append("pairing was seen") }
        section.insert(
            (
                "description",
                .string(
                    "Seen in \(replica.source): " + said.joined(separator: "; ")
                        + ". A passkey the device displays is drawn by the kernel (docs/pairing.md).")
            ), at: 0)
        return section
    }

    // MARK: GATT table

    /// The GAP appearance characteristic's value, if it was read.
    var gapAppearance: UInt16? {
        guard let value = replica.characteristics.first(where: { $0.characteristic.uuid == .appearance })?.characteristic.value,
            value.count == 2
        else { return nil }
        return UInt16(value[0]) | UInt16(value[1]) << 8
    }

    /// The services the profile declares: all but those BlueZ registers itself.
    var emulatedServices: [DeviceReplica.Service] { replica.services.filter { Self.providedByBlueZ($0) == nil } }

    /// LE Audio services: BlueZ's audio plugins register their own, and a GATT application cannot stand in
    /// for an audio device.
    static let leAudioServices: Set<UInt16> = [
        0x1843, 0x1844, 0x1845, 0x1846, 0x1848, 0x1849, 0x184B, 0x184C, 0x184D, 0x184E,
        0x184F, 0x1850, 0x1853, 0x1854, 0x1855,
    ]

    /// Why the emulating BlueZ provides `service` itself (so the profile leaves it out), or nil.
    static func providedByBlueZ(_ service: DeviceReplica.Service) -> String? {
        if service.uuid == .genericAccess || service.uuid == .genericAttribute {
            return "provided by BlueZ itself (device name and appearance go to \"device\")"
        }
        // BlueZ's own Device Information service (main.conf DeviceID): the PnP ID alone.
        if service.uuid == BluetoothUUID(0x180A), service.characteristics.map(\.uuid) == [BluetoothUUID(0x2A50)] {
            return "BlueZ's own Device Information (PnP ID only, main.conf DeviceID) — left out, BlueZ adds it itself"
        }
        if let short = service.uuid.uint16, leAudioServices.contains(short) {
            return "an LE Audio service: BlueZ's audio plugins register their own, a profile cannot emulate audio — left out"
        }
        return nil
    }

    mutating func buildServices() -> [JSONNode] {
        var services: [JSONNode] = []
        let unpinnable = options.pinHandles ? unpinnableReason : nil
        let pinned = options.pinHandles && unpinnable == nil
        if let unpinnable, replica.services.contains(where: { $0.handle != nil }) {
            report.append(
                "handles not pinned: the device's attribute layout is not one BlueZ can reproduce (\(unpinnable)); a phone with cached handles must rediscover"
            )
        }
        var serviceIDs: [AttributeHandle: String] = [:]
        for service in replica.services {
            if let reason = Self.providedByBlueZ(service) {
                report.append("\(service.uuid.name ?? service.uuid.description) service (\(Self.uuidText(service.uuid))): \(reason)")
                continue
            }
            let id = ids.unique(Self.readableName(service.uuid) ?? "service_" + service.uuid.shortDescription.prefix(8))
            if let handle = service.handle { serviceIDs[handle] = id }
            var object: [(String, JSONNode)] = [("id", .string(id)), ("uuid", .string(Self.uuidText(service.uuid)))]
            if !service.isPrimary { object.append(("primary", .bool(false))) }
            if pinned, let handle = service.handle { object.append(("handle", .int(Int(handle.rawValue)))) }
            if let provenance = service.provenance { object.append(("description", .string(provenance))) }
            var characteristics: [JSONNode] = []
            for characteristic in service.characteristics {
                characteristics.append(buildCharacteristic(characteristic, pinned: pinned))
            }
            object.append(("characteristics", .array(characteristics)))
            services.append(.object(object))
        }
        // Includes, now that every service has its id.
        let known = emulatedServiceStarts
        for (index, service) in emulatedServices.enumerated()
        where !service.includes.isEmpty {
            if let start = service.handle, service.includes.contains(start), let id = serviceIDs[start] {
                report.append(
                    "the \(id) service's include of itself (handle \(start)) left out: a profile cannot say it")
            }
            let included = includedStarts(of: service, among: known).compactMap { serviceIDs[$0] }
            guard !included.isEmpty, case .object(var members) = services[index].value else { continue }
            members.insert(JSONMember(key: "includes", value: .array(included.map(JSONNode.string))), at: members.count - 1)
            services[index].value = .object(members)
        }
        return services
    }

    mutating func buildCharacteristic(_ characteristic: DeviceReplica.Characteristic, pinned: Bool) -> JSONNode {
        let id = ids.unique(Self.readableName(characteristic.uuid) ?? "char_" + characteristic.uuid.shortDescription.prefix(8))
        // What the device did counts as much as what it declared: it notified or indicated, so the emulation must.
        let declared = characteristic.properties.union(characteristic.valueHandle.flatMap { observed[$0] } ?? [])
        if let handle = characteristic.valueHandle {
            characteristicIDs[handle] = id
            properties[handle] = declared
        }
        var object: [(String, JSONNode)] = [("id", .string(id)), ("uuid", .string(Self.uuidText(characteristic.uuid)))]
        var flags = declared.subtracting(.extendedProperties).bluezFlags
        if let extended = characteristic.descriptors.first(where: { $0.uuid == .extendedProperties })?.value, let bits = extended.first {
            if bits & 0x01 != 0 { flags.append("reliable-write") }
            if bits & 0x02 != 0 { flags.append("writable-auxiliaries") }
        }
        flags += characteristic.security.bluezFlags
        if flags.isEmpty {
            // Declared with no properties: BlueZ needs at least one flag. Broadcast alone gives no access at all,
            // as on the device; only the declaration's properties byte differs (0x01 instead of 0x00).
            flags = ["broadcast"]
            report.append("\(id): declared with no properties; BlueZ needs one, so it is declared as broadcast (still no access)")
        }
        object.append(("flags", .array(flags.map(JSONNode.string))))
        if pinned, let handle = characteristic.valueHandle { object.append(("handle", .int(Int(handle.rawValue)))) }
        if let value = characteristic.value {
            object.append(("value", .hex(Array(value.prefix(ATTMTU.maximumValueLength)))))
        }
        var description = characteristic.provenance ?? ""
        if let provenance = characteristic.valueProvenance { description += (description.isEmpty ? "" : "; ") + "value " + provenance }
        if characteristic.value == nil, characteristic.properties.contains(.read) {
            description += (description.isEmpty ? "" : "; ") + "value never read in the recording"
            report.append("\(id): readable, but its value was never read — it starts empty")
        }
        if !description.isEmpty { object.append(("description", .string(description))) }
        // Writes to this characteristic are replayed by rules; its value must not change with each write.
        if hasWrites(to: characteristic.valueHandle) { object.append(("storeWrites", .bool(false))) }
        var descriptors: [JSONNode] = []
        for descriptor in characteristic.descriptors {
            // BlueZ adds these itself: the client configuration (subscriptions) and the extended properties.
            if descriptor.uuid == .clientCharacteristicConfiguration || descriptor.uuid == .extendedProperties { continue }
            var item: [(String, JSONNode)] = []
            if descriptor.uuid == .userDescription, let value = descriptor.value, let text = String(validating: value, as: UTF8.self) {
                item = [("type", .string("user-description")), ("text", .string(text))]
            } else {
                item = [("uuid", .string(Self.uuidText(descriptor.uuid))), ("flags", .array([.string("read")]))]
                if let value = descriptor.value { item.append(("value", .hex(value))) }
            }
            if pinned, let handle = descriptor.handle { item.append(("handle", .int(Int(handle.rawValue)))) }
            descriptors.append(.object(item))
        }
        if !descriptors.isEmpty { object.append(("descriptors", .array(descriptors))) }
        return .object(object)
    }

    /// The start handles of the services the profile has (``includedStarts(of:among:)``'s `known`).
    var emulatedServiceStarts: Set<AttributeHandle> { Set(emulatedServices.compactMap(\.handle)) }

    /// The services `service` includes, by start handle, as the profile has them: services it has (`known`, made
    /// once by the caller: a capture may hold thousands), once each, not itself (a recorded include declaration may
    /// name the service's own range).
    func includedStarts(of service: DeviceReplica.Service, among known: Set<AttributeHandle>) -> [AttributeHandle] {
        var seen = Set<AttributeHandle>()
        return service.includes.filter { known.contains($0) && $0 != service.handle && seen.insert($0).inserted }
    }

    /// Why BlueZ would not lay the attributes out where the device had them; nil when it would: each
    /// service's handles consecutive from its declaration (includes first), each characteristic as BlueZ
    /// builds it — declaration, value, the client configuration (notify/indicate), the extended properties,
    /// then the other descriptors in order.
    var unpinnableReason: String? {
        var previousEnd: AttributeHandle = 0
        let known = emulatedServiceStarts
        for service in emulatedServices {
            let name = Self.uuidText(service.uuid)
            guard let start = service.handle else { return "service \(name) has no known handle" }
            guard start > previousEnd else { return "service \(name) at \(start) overlaps the one before it" }
            // The device's include declarations take handles whether or not the profile can have them all.
            guard includedStarts(of: service, among: known).count == service.includes.count else {
                return "service \(name) includes itself, a service twice or one not emulated: its handles move"
            }
            var next = Int(start.rawValue) + 1 + service.includes.count
            for characteristic in service.characteristics {
                let what = "characteristic \(Self.uuidText(characteristic.uuid))"
                guard let value = characteristic.valueHandle else { return "\(what) has no known handle" }
                guard Int(value.rawValue) == next + 1, characteristic.declarationHandle.map({ Int($0.rawValue) == next }) ?? true else {
                    return
                        "\(what): value at \(value), BlueZ would put it at 0x\(Hex.word(UInt16(clamping: next + 1))) (a gap or an undiscovered attribute before it)"
                }
                next = Int(value.rawValue) + 1
                var expected: [BluetoothUUID] = []
                let sends = characteristic.properties.union(observed[value] ?? []).intersection([.notify, .indicate])
                if !sends.isEmpty {
                    expected.append(.clientCharacteristicConfiguration)
                }
                if characteristic.descriptors.contains(where: { $0.uuid == .extendedProperties }) { expected.append(.extendedProperties) }
                expected += characteristic.descriptors.map(\.uuid).filter {
                    $0 != .clientCharacteristicConfiguration && $0 != .extendedProperties
                }
                // Looked up by UUID and handle, not searched for each: a recording may give a characteristic thousands.
                let present = Set(
                    characteristic.descriptors.compactMap { descriptor in
                        descriptor.handle.map { DescriptorPlace(uuid: descriptor.uuid, handle: Int($0.rawValue)) }
                    })
                for uuid in expected {
                    guard present.contains(DescriptorPlace(uuid: uuid, handle: next)) else {
                        let found = characteristic.descriptors.first { $0.uuid == uuid }?.handle
                        return "\(what): descriptor \(Self.uuidText(uuid)) "
                            + (found.map { "at 0x\(Hex.word($0.rawValue))" } ?? "not discovered")
                            + ", BlueZ would put it at 0x\(Hex.word(UInt16(clamping: next)))"
                    }
                    next += 1
                }
            }
            let end = next - 1
            // A group may end past its last attribute (the last service often claims up to 0xFFFF); not before it.
            if let declaredEnd = service.endHandle, Int(declaredEnd.rawValue) < end {
                return
                    "service \(name) ends at \(declaredEnd), before its attributes end at 0x\(Hex.word(UInt16(clamping: end)))"
            }
            previousEnd = AttributeHandle(rawValue: UInt16(clamping: end))
        }
        return nil
    }

    /// A descriptor's UUID at a handle (``unpinnableReason``).
    struct DescriptorPlace: Hashable {
        var uuid: BluetoothUUID
        var handle: Int
    }

    func hasWrites(to handle: AttributeHandle?) -> Bool {
        guard let handle else { return false }
        return written.contains(handle)
    }

    // MARK: Advertisement

    mutating func buildAdvertisement() -> JSONNode? {
        let parts = [replica.advertisingData, replica.scanResponse].compactMap { $0 }
        guard !parts.isEmpty else {
            report.append("no advertisement recorded (the phone was not scanning): the profile advertises its name and first service only")
            advertisesAppearance = true  // nothing recorded says otherwise: the device's appearance is advertised
            return fallbackAdvertisement()
        }
        var fields: [(String, JSONNode)] = []
        var budget = AdvertisementPlacement()
        // Extended advertising as recorded: up to 251 bytes, and a connectable set carries its name in the advertising
        // data (it has no scan response); legacy: 31, the name alone in the scan response.
        let limit = replica.secondaryChannel == nil ? AdvertisingData.legacyLimit : AdvertisingData.extendedLimit
        if let name = (parts.lazy.compactMap(\.localName).first ?? replica.name).map({ advertisedName($0) }), !name.isEmpty {
            fields.append(("localName", .string(Self.textTemplate(name))))
            if replica.secondaryChannel == nil {
                budget.scanResponse += 2 + name.utf8.count
            } else {
                budget.advertisingData += 2 + name.utf8.count
            }
        }
        if let channel = replica.secondaryChannel {
            fields.append(("secondaryChannel", .string(channel.rawValue)))
            report.append(
                "advertisement: extended advertising on the \(channel.rawValue) secondary PHY, as recorded: gattemu runs it on a Bluetooth 5 adapter "
                    + "(one without extended advertising refuses it, naming its limit)")
        }
        func add(_ key: String, _ value: JSONNode, bytes: Int, what: String) {
            guard budget.advertisingData + bytes <= limit else {
                report.append("advertisement: \(what) left out: it does not fit the \(limit) bytes BlueZ places in the advertising data")
                return
            }
            budget.advertisingData += bytes
            fields.append((key, value))
        }
        let services = parts.flatMap(\.serviceUUIDs).uniqued()
        if !services.isEmpty {
            let sizes = Dictionary(grouping: services, by: \.advertisedSize).keys.count
            add(
                "serviceUUIDs", .array(services.map { .string(Self.uuidText($0)) }),
                bytes: services.reduce(2 * sizes) { $0 + $1.advertisedSize }, what: "service UUIDs")
        }
        let solicited = parts.flatMap(\.solicitedServiceUUIDs).uniqued()
        if !solicited.isEmpty {
            let sizes = Dictionary(grouping: solicited, by: \.advertisedSize).keys.count
            add(
                "solicitUUIDs", .array(solicited.map { .string(Self.uuidText($0)) }),
                bytes: solicited.reduce(2 * sizes) { $0 + $1.advertisedSize }, what: "solicited UUIDs")
        }
        var manufacturer: [(String, JSONNode)] = []
        var manufacturerBytes = 0
        for (company, data) in parts.flatMap(\.manufacturerData) where !manufacturer.contains(where: { $0.0 == Self.company(company) }) {
            // bluetoothd refuses the whole advertisement with an empty value (an empty byte array it cannot parse).
            guard !data.isEmpty else {
                report.append(
                    "advertisement: manufacturer data of company \(Self.company(company)) with no bytes left out: bluetoothd refuses the advertisement with it"
                )
                continue
            }
            manufacturer.append((Self.company(company), .hex(data)))
            manufacturerBytes += 4 + data.count
        }
        if !manufacturer.isEmpty { add("manufacturerData", .object(manufacturer), bytes: manufacturerBytes, what: "manufacturer data") }
        var serviceData: [(String, JSONNode)] = []
        var serviceDataBytes = 0
        for (uuid, data) in parts.flatMap(\.serviceData) where !serviceData.contains(where: { $0.0 == Self.uuidText(uuid) }) {
            // bluetoothd refuses the whole advertisement with an empty value: the UUID alone is what it said.
            guard !data.isEmpty else {
                report.append(
                    "advertisement: service data of \(Self.uuidText(uuid)) with no bytes left out (bluetoothd refuses the advertisement with it)"
                        + (services.contains(uuid) ? "" : "; the UUID is not among the advertised services either"))
                continue
            }
            serviceData.append((Self.uuidText(uuid), .hex(data)))
            serviceDataBytes += 2 + uuid.advertisedSize + data.count
        }
        if !serviceData.isEmpty { add("serviceData", .object(serviceData), bytes: serviceDataBytes, what: "service data") }
        if let appearance = parts.lazy.compactMap(\.appearance).first {
            add("appearance", .int(Int(appearance)), bytes: 4, what: "appearance")
            advertisesAppearance = fields.contains { $0.0 == "appearance" }
        }
        if parts.contains(where: { $0.txPower != nil }) {
            add("includes", .array([.string("tx-power")]), bytes: 3, what: "TX power")
            report.append(
                "advertisement: the TX power level field is included; its value is the adapter's, not the recorded \(parts.lazy.compactMap(\.txPower).first ?? 0) dBm"
            )
        }
        var other: [(String, JSONNode)] = []
        for structure in parts.flatMap(\.otherStructures) where structure.type != .flags {
            // AD type 0 is reserved: no advertisement may carry it.
            guard structure.type.rawValue != 0 else {
                report.append("advertisement: an AD structure of the reserved type 0x00 left out")
                continue
            }
            guard !structure.data.isEmpty else {
                report.append("advertisement: an empty \(structure.type) structure left out: bluetoothd refuses the advertisement with it")
                continue
            }
            guard !AdvertisingData.typesBlueZRefusesInData.contains(structure.type.rawValue) else {
                report.append(
                    "advertisement: the \(structure.type) structure (0x\(Hex.string(structure.data))) left out: bluetoothd does not let an application advertise it"
                )
                continue
            }
            other.append(("0x" + Hex.string([structure.type.rawValue]).uppercased(), .hex(structure.data)))
        }
        if !other.isEmpty {
            add(
                "data", .object(other),
                bytes: other.reduce(0) { total, item in
                    guard let text = item.1["hex"]?.stringValue else { return total }
                    return total + 2 + text.count / 2
                }, what: "other AD structures (\(other.map(\.0).joined(separator: ", ")))")
        }
        if let flags = parts.lazy.compactMap(\.flags).first, flags & 0x03 == 0 {
            fields.append(("discoverable", .bool(false)))
        }
        if let provenance = replica.advertisingProvenance { fields.append(("description", .string(provenance))) }
        return .object(fields)
    }

    mutating func fallbackAdvertisement() -> JSONNode? {
        var fields: [(String, JSONNode)] = []
        if let name = replica.name.map({ advertisedName($0) }), !name.isEmpty {
            fields.append(("localName", .string(Self.textTemplate(name))))
        }
        if let service = emulatedServices.first(where: \.isPrimary) {
            fields.append(("serviceUUIDs", .array([.string(Self.uuidText(service.uuid))])))
        }
        return fields.isEmpty ? nil : .object(fields)
    }

    /// `name` as the scan response can carry it, shortened (and reported) when it is longer: a GAP Device Name
    /// or an extended advertisement's name may be; the device itself advertised it shortened.
    mutating func advertisedName(_ recorded: String) -> String {
        // bluetoothd takes the name as a D-Bus string, which cannot hold a NUL: a name padded with NULs (a fixed-size
        // field in the firmware) is advertised as what comes before the first one.
        var name = recorded
        if let nul = recorded.firstIndex(of: "\u{0}") {
            name = String(recorded[..<nul])
            report.append(
                "advertisement: the name \(recorded.debugDescription) has NUL bytes (\(recorded.utf8.count - name.utf8.count) bytes from the first): "
                    + "advertised as \(name.debugDescription), bluetoothd cannot carry a NUL")
        }
        let advertised = AdvertisingData.scanResponseName(name)
        if advertised != name {
            report.append(
                "advertisement: the name (\(name.utf8.count) bytes) advertised shortened to \(advertised.utf8.count) bytes, the most a scan response holds"
            )
        }
        return advertised
    }

    // MARK: Behaviour

    /// One write of the central and what the device did until the next write.
    struct Exchange {
        var event: DeviceReplica.Event
        var handle: AttributeHandle
        var value: [UInt8]
        var withResponse: Bool
        var answers: [Answer] = []
        var error: ATTErrorCode?
    }

    struct ExchangeKey: Hashable {
        var handle: AttributeHandle
        var connection: Int
    }

    struct Answer: Equatable {
        var handle: AttributeHandle
        var value: [UInt8]
        var indication: Bool
        /// Milliseconds after the event before it (the write or the previous answer).
        var gap: Int?
        var frame: Int?

        static func == (a: Answer, b: Answer) -> Bool { a.handle == b.handle && a.value == b.value && a.indication == b.indication }
    }

    mutating func buildRules() {
        var exchanges: [Exchange] = []
        var subscriptions: [(event: DeviceReplica.Event, handle: AttributeHandle, answers: [Answer])] = []
        var reads: [AttributeHandle: [(DeviceReplica.Event, ReadOutcome)]] = [:]
        var unsolicited: [(DeviceReplica.Event, Answer)] = []
        /// Where notifications go now, per connection: the latest write, or the latest subscription.
        enum Owner {
            case none
            case exchange(Int)
            case subscription(Int)
        }
        var owner: [Int: Owner] = [:]
        var lastTime: [Int: Double] = [:]
        /// The latest exchange on each characteristic and connection, for the errors that refuse it.
        var latestExchange: [ExchangeKey: Int] = [:]
        for event in replica.conversation {
            var gap: Int?
            if let time = event.time, let last = lastTime[event.connection] { gap = Int(((time - last) * 1000).rounded()) }
            switch event.kind {
            case .connected, .disconnected:
                owner[event.connection] = Owner.none
            case .write(let handle, let value, let withResponse):
                guard characteristicIDs[handle] != nil else { continue }
                exchanges.append(Exchange(event: event, handle: handle, value: value, withResponse: withResponse))
                owner[event.connection] = .exchange(exchanges.count - 1)
                latestExchange[ExchangeKey(handle: handle, connection: event.connection)] = exchanges.count - 1
            case .subscribe(let handle, let notify, let indicate):
                guard notify || indicate, characteristicIDs[handle] != nil else { continue }
                subscriptions.append((event, handle, []))
                if case .exchange = owner[event.connection] ?? Owner.none {
                } else {
                    owner[event.connection] = .subscription(subscriptions.count - 1)
                }
            case .notification(let handle, let value, let indication):
                guard characteristicIDs[handle] != nil else { continue }
                let answer = Answer(handle: handle, value: value, indication: indication, gap: gap, frame: event.frame)
                switch owner[event.connection] ?? Owner.none {
                case .exchange(let index): exchanges[index].answers.append(answer)
                case .subscription(let index): subscriptions[index].answers.append(answer)
                case .none: unsolicited.append((event, answer))
                }
            case .read(let handle, let offset, let value):
                if offset == 0, characteristicIDs[handle] != nil { reads[handle, default: []].append((event, .value(value))) }
            case .error(let handle, let request, let code):
                // A read the device refused (not for security: the characteristic's flags say that) is replayed
                // as the same refusal.
                if request == .readRequest, !code.asksForSecurity, characteristicIDs[handle] != nil, Self.failName(code) != nil {
                    reads[handle, default: []].append((event, .error(code)))
                }
                if request == .writeRequest || request == .prepareWriteRequest || request == .executeWriteRequest,
                    let index = latestExchange[ExchangeKey(handle: handle, connection: event.connection)],
                    !code.asksForSecurity
                {
                    exchanges[index].error = code
                }
            }
            if let time = event.time { lastTime[event.connection] = time }
        }
        buildWriteRules(exchanges)
        buildSubscriptionRules(subscriptions)
        buildReadRules(reads)
        buildTriggers(unsolicited)
        buildOtherwiseRules(exchanges)
        if exchanges.contains(where: { $0.answers.count > options.maximumNotificationsPerRule }) {
            report.append(
                "writes followed by more than \(options.maximumNotificationsPerRule) notifications replay the first \(options.maximumNotificationsPerRule) of them"
            )
        }
    }

    mutating func buildWriteRules(_ exchanges: [Exchange]) {
        // Occurrences of the same write (characteristic and bytes), in order.
        var groups: [[Int]] = []
        var groupOf: [String: Int] = [:]
        for (index, exchange) in exchanges.enumerated() {
            let key = "\(exchange.handle.rawValue):" + Hex.string(exchange.value)
            if let group = groupOf[key] {
                groups[group].append(index)
            } else {
                groupOf[key] = groups.count
                groups.append([index])
            }
        }
        var sequences = 0
        for group in groups {
            let occurrences = group.map { exchanges[$0] }
            let first = occurrences[0]
            guard let characteristic = characteristicIDs[first.handle] else { continue }
            let sameEveryTime = occurrences.allSatisfy { $0.answers == first.answers && $0.error == first.error }
            let on: JSONNode = .object([("write", .string(characteristic)), ("equals", .hex(first.value))])
            if sameEveryTime {
                addRule(
                    id: "\(characteristic)-write", on: on, when: nil, actions: actions(for: first),
                    description: describe(first, occurrences.count))
                continue
            }
            // Answered differently each time (counters, nonces): replayed in the recorded order; after the
            // last, the last answer again.
            sequences += 1
            let counter = ids.unique("\(characteristic)_write_\(sequences)")
            state.append((counter, .int(0)))
            for (index, occurrence) in occurrences.enumerated() {
                let last = index == occurrences.count - 1
                let when: JSONNode = .object([("state", .string(counter)), (last ? "greaterOrEqual" : "equals", .int(index))])
                var actions = actions(for: occurrence)
                if !last { actions.append(.object([("set", .object([(counter, .object([("increment", .int(1))]))]))])) }
                addRule(
                    id: "\(characteristic)-write", on: on, when: when, actions: actions,
                    description: describe(occurrence, 1) + " (occurrence \(index + 1) of \(occurrences.count))")
            }
        }
        if sequences > 0 {
            report.append(
                "\(sequences) writes were answered differently each time: they replay in the recorded order (app-level crypto with fresh nonces replays only for identical writes)"
            )
        }
    }

    mutating func actions(for exchange: Exchange) -> [JSONNode] {
        var actions: [JSONNode] = []
        if let error = exchange.error, exchange.withResponse, let name = Self.failName(error) {
            actions.append(.object([("fail", .string(name))]))
        }
        actions += notifyActions(exchange.answers)
        return actions
    }

    mutating func notifyActions(_ answers: [Answer]) -> [JSONNode] {
        var actions: [JSONNode] = []
        for answer in answers.prefix(options.maximumNotificationsPerRule) {
            guard let target = characteristicIDs[answer.handle] else { continue }
            // Hex, the characteristic's id and the JSON around them (indented), with a delay.
            let cost = 2 * answer.value.count + target.utf8.count + 96
            guard notificationText >= cost else {
                droppedNotifications += 1
                continue
            }
            notificationText -= cost
            if options.timing == .recorded, let gap = answer.gap, gap > 0 {
                actions.append(.object([("delay", .int(min(gap, 60_000)))]))
            }
            let can = properties[answer.handle] ?? [.notify, .indicate]
            let verb =
                answer.indication ? (can.contains(.indicate) ? "indicate" : "notify") : (can.contains(.notify) ? "notify" : "indicate")
            actions.append(.object([(verb, .string(target)), ("value", .hex(answer.value))]))
        }
        return actions
    }

    mutating func buildSubscriptionRules(_ subscriptions: [(event: DeviceReplica.Event, handle: AttributeHandle, answers: [Answer])]) {
        var done: Set<AttributeHandle> = []
        for subscription in subscriptions where !subscription.answers.isEmpty && !done.contains(subscription.handle) {
            done.insert(subscription.handle)
            guard let characteristic = characteristicIDs[subscription.handle] else { continue }
            addRule(
                id: "\(characteristic)-subscribe", on: .object([("subscribe", .string(characteristic))]), when: nil,
                actions: notifyActions(subscription.answers),
                description: "after the subscription" + Self.at(subscription.event) + ": \(subscription.answers.count) notifications")
        }
    }

    /// What one read of the device gave: its value, or the ATT error it refused the read with.
    enum ReadOutcome: Equatable, Hashable {
        case value([UInt8])
        case error(ATTErrorCode)

        var action: JSONNode {
            switch self {
            case .value(let bytes): .object([("reply", .hex(bytes))])
            case .error(let code): .object([("fail", .string(Builder.failName(code) ?? "failed"))])
            }
        }
    }

    mutating func buildReadRules(_ reads: [AttributeHandle: [(DeviceReplica.Event, ReadOutcome)]]) {
        for handle in reads.keys.sorted() {
            guard let occurrences = reads[handle], let characteristic = characteristicIDs[handle] else { continue }
            let outcomes = occurrences.map(\.1)
            if Set(outcomes).count == 1, case .error(let code) = outcomes[0] {
                // Refused every time: one rule.
                addRule(
                    id: "\(characteristic)-read", on: .object([("read", .string(characteristic))]), when: nil,
                    actions: [outcomes[0].action],
                    description: "read refused with \(code)" + Self.at(occurrences[0].0) + " (all \(occurrences.count) times)")
                report.append("\(characteristic): every read refused with \(code); replayed so")
                continue
            }
            guard Set(outcomes).count > 1 else { continue }  // Always the same value: the initial value answers.
            let counter = ids.unique("\(characteristic)_read")
            state.append((counter, .int(0)))
            for (index, (event, outcome)) in occurrences.enumerated() {
                let last = index == occurrences.count - 1
                var actions: [JSONNode] = [outcome.action]
                if !last { actions.append(.object([("set", .object([(counter, .object([("increment", .int(1))]))]))])) }
                addRule(
                    id: "\(characteristic)-read", on: .object([("read", .string(characteristic))]),
                    when: .object([("state", .string(counter)), (last ? "greaterOrEqual" : "equals", .int(index))]),
                    actions: actions, description: "read" + Self.at(event) + " (occurrence \(index + 1) of \(occurrences.count))")
            }
            report.append("\(characteristic): read \(occurrences.count) times with different answers; replayed in order")
        }
    }

    mutating func buildTriggers(_ unsolicited: [(DeviceReplica.Event, Answer)]) {
        guard !unsolicited.isEmpty else { return }
        var byCharacteristic: [AttributeHandle: [(DeviceReplica.Event, Answer)]] = [:]
        for item in unsolicited { byCharacteristic[item.1.handle, default: []].append(item) }
        for handle in byCharacteristic.keys.sorted() {
            guard let characteristic = characteristicIDs[handle], let items = byCharacteristic[handle] else { continue }
            let name = ids.unique("notify_\(characteristic)")
            triggers.append(
                (name, .string("Sends the \(items.count) notifications of \(characteristic) the device sent without a write before them")))
            addRule(
                id: name, on: .object([("trigger", .string(name))]), when: nil, actions: notifyActions(items.map(\.1)),
                description: "unsolicited notifications" + Self.at(items[0].0))
        }
        report.append(
            "\(unsolicited.count) notifications came without a write before them: fire them with the triggers \(triggers.map(\.0).joined(separator: ", "))"
        )
    }

    mutating func buildOtherwiseRules(_ exchanges: [Exchange]) {
        let written = exchanges.map(\.handle).uniqued()
        for handle in written {
            guard let characteristic = characteristicIDs[handle] else { continue }
            let on: JSONNode = .object([("write", .string(characteristic))])
            switch options.otherwise {
            case .ignore:
                addRule(
                    id: "\(characteristic)-unrecorded", on: on, when: nil, otherwise: true,
                    actions: [.object([("log", .string("unrecorded write to \(characteristic) ignored"))])],
                    description: "a write the recording does not have: accepted and logged")
            case .error:
                addRule(
                    id: "\(characteristic)-unrecorded", on: on, when: nil, otherwise: true,
                    actions: [
                        .object([("log", .string("unrecorded write to \(characteristic): answered with an error"))]),
                        .object([("fail", .string("failed"))]),
                    ],
                    description: "a write the recording does not have: an ATT error (Unlikely Error) when the central waits for an answer")
            case .nearest:
                var seen: Set<[UInt8]> = []
                for exchange in exchanges where exchange.handle == handle && seen.insert(exchange.value).inserted {
                    addRule(
                        id: "\(characteristic)-nearest",
                        on: .object([("write", .string(characteristic)), ("closestTo", .hex(exchange.value))]),
                        when: nil, otherwise: true,
                        actions: [
                            .object([
                                (
                                    "log",
                                    .string(
                                        "unrecorded write to \(characteristic): answered as the recorded \(Hex.string(Array(exchange.value.prefix(16))))…"
                                    )
                                )
                            ])
                        ]
                            + actions(for: exchange),
                        description: "a write the recording does not have, closest to the one" + Self.at(exchange.event))
                }
            }
        }
    }

    mutating func addRule(
        id: String, on: JSONNode, when: JSONNode?, otherwise: Bool = false, actions: [JSONNode], description: String
    ) {
        guard rules.count < options.maximumRules else {
            droppedRules += 1
            return
        }
        var rule: [(String, JSONNode)] = [("id", .string(ids.unique(id))), ("description", .string(description)), ("on", on)]
        if let when { rule.append(("when", when)) }
        if otherwise { rule.append(("otherwise", .bool(true))) }
        rule.append(("do", .array(actions)))
        rule.append(("stop", .bool(true)))
        rules.append(.object(rule))
    }

    func describe(_ exchange: Exchange, _ count: Int) -> String {
        var text = (exchange.withResponse ? "write request" : "write command") + Self.at(exchange.event)
        if count > 1 { text += " (and \(count - 1) more times, answered the same)" }
        if !exchange.answers.isEmpty {
            let frames = exchange.answers.compactMap(\.frame)
            text += " → \(exchange.answers.count) notification\(exchange.answers.count == 1 ? "" : "s")"
            if let first = frames.first, let last = frames.last {
                text += first == last ? " (frame \(first))" : " (frames \(first)–\(last))"
            }
        }
        if let error = exchange.error { text += " → error \(error)" }
        return text
    }

    static func at(_ event: DeviceReplica.Event) -> String {
        var parts: [String] = []
        if let frame = event.frame { parts.append("frame \(frame)") }
        if let time = event.time { parts.append(String(Int((time * 1000).rounded())) + " ms") }
        return parts.isEmpty ? "" : " at " + parts.joined(separator: ", ")
    }

    // MARK: Names and forms

    /// A profile id from a SIG name: `Battery Level` → `battery_level`.
    static func readableName(_ uuid: BluetoothUUID) -> String? {
        guard let name = uuid.name else { return nil }
        var id = ""
        for character in name.lowercased() {
            if character.isASCII && (character.isLetter || character.isNumber) {
                id.append(character)
            } else if !id.hasSuffix("_") {
                id.append("_")
            }
        }
        while id.hasSuffix("_") { id.removeLast() }
        return id.first?.isLetter == true ? id : nil
    }

    /// 16-bit UUIDs short (`2a19`), others in full.
    static func uuidText(_ uuid: BluetoothUUID) -> String { uuid.uint16 != nil ? uuid.shortDescription : uuid.description }

    static func company(_ id: UInt16) -> String {
        "0x" + Hex.string([UInt8(id >> 8), UInt8(id & 0xFF)]).uppercased()
    }

    /// Text as a text template: braces doubled so that `{` is not read as an expression.
    static func textTemplate(_ text: String) -> String {
        text.replacingOccurrences(of: "{", with: "{{").replacingOccurrences(of: "}", with: "}}")
    }

    /// The profile's name for the ATT error a recorded read or write failed with: the error that makes BlueZ send
    /// that code (``ATTError/init(sending:)``), or `failed` for an unlikely error, which no BlueZ application can
    /// send; nil for the codes bluetoothd decides itself (security).
    static func failName(_ code: ATTErrorCode) -> String? {
        (ATTError(sending: code) ?? (code == .unlikelyError ? .failed : nil))?.description
    }
}

/// Bytes BlueZ 5.66 places in the legacy advertising data (flags first) and in the scan response (the name).
struct AdvertisementPlacement {
    var advertisingData = 3
    var scanResponse = 0
}

/// Unique, valid profile identifiers.
struct IdentifierTable {
    private var used: Set<String> = []
    /// The suffix to try next for each base already taken: the ones before it are taken too (thousands of
    /// characteristics may share a UUID, and so a base).
    private var nextSuffix: [String: Int] = [:]

    /// `base` made a valid identifier, with `_2`, `_3`… when taken.
    mutating func unique(_ base: some StringProtocol) -> String {
        var cleaned = String(base.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") ? $0 : "_" })
        if cleaned.first.map({ !($0.isLetter || $0 == "_") }) ?? true { cleaned = "_" + cleaned }
        var candidate = cleaned
        var counter = nextSuffix[cleaned] ?? 2
        while used.contains(candidate) {
            candidate = "\(cleaned)_\(counter)"
            counter += 1
        }
        if counter > 2 { nextSuffix[cleaned] = counter }
        used.insert(candidate)
        return candidate
    }
}

extension Sequence where Element: Hashable {
    func uniqued() -> [Element] {
        var seen: Set<Element> = []
        return filter { seen.insert($0).inserted }
    }
}

extension String {
    fileprivate func replacingOccurrences(of target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
