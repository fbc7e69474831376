import BlueZ
import Bluetooth
import DBus
import Replica

/// Turns what `gattemu clone` recorded as a central (``CentralRecording``) into a ``DeviceReplica``, which
/// ``ReplicaProfile`` writes as a profile.
///
/// The GATT table keeps BlueZ's handles (characteristic value = declaration + 1); where BlueZ gave none,
/// characteristics get stand-in handles past the known ones, so that the conversation can name them, and
/// their services no handle (nothing is pinned there). Errors that ask for pairing or encryption become the
/// characteristic's security level for that operation: encryption, or authentication when the link was
/// paired already and the device still refused. The conversation is the clone's own: connection, reads,
/// subscriptions and notifications in time order, seconds since connecting.
public enum CloneReplica {
    public static func make(_ recording: CentralRecording) -> DeviceReplica {
        var builder = Builder(recording)
        return builder.build()
    }
}

private struct Builder {
    let recording: CentralRecording
    var replica: DeviceReplica
    /// Value handle of each characteristic and handle of each descriptor, by object path.
    var valueHandles: [DBusObjectPath: AttributeHandle] = [:]
    var descriptorHandles: [DBusObjectPath: AttributeHandle] = [:]
    var characteristicsByPath: [DBusObjectPath: RemoteGattTable.Characteristic] = [:]
    /// Where each characteristic sits in `replica.services`.
    var positions: [DBusObjectPath: (service: Int, characteristic: Int)] = [:]

    init(_ recording: CentralRecording) {
        self.recording = recording
        let address = recording.advertisement.address
        replica = DeviceReplica(
            source: "clone of \(address?.description ?? recording.advertisement.path.rawValue) on \(recording.adapterName)")
        replica.address = address
        replica.addressType = recording.advertisement.addressType
    }

    mutating func build() -> DeviceReplica {
        let advertisement = AdvertisementReconstruction(recording.advertisement, adapter: recording.adapterName)
        replica.advertisingData = advertisement.advertisingData
        replica.scanResponse = advertisement.scanResponse.structures.isEmpty ? nil : advertisement.scanResponse
        replica.advertisingProvenance = advertisement.provenance
        buildServices()
        applyReads()
        applySubscriptions()
        replica.name = gapName ?? recording.advertisement.name ?? recording.connectedProperties?.name
        replica.mtu = recording.table.characteristics.compactMap(\.mtu).max()
        replica.security.pairingSeen = recording.pairedDuring
        replica.security.encrypted = recording.pairedDuring
        buildConversation()
        replica.notes = recording.notes + advertisement.notes + replica.notes
        if !recording.table.services.contains(where: { $0.uuid == .genericAccess }) {
            replica.notes.append(
                "GATT: BlueZ did not export the Generic Access service (5.66 keeps the services its plugins handle to itself): the name comes from the advertisement"
            )
        }
        notes(servicesNotExported: recording)
        replica.notes += replica.l2capChannelNotes
        if recording.pairedBefore {
            replica.notes.append("the device was paired with \(recording.adapterName) before the clone: what it shows unpaired may differ")
        }
        return replica
    }

    /// A service the device lists (Device1's UUIDs once resolved) that BlueZ did not export is missing from the
    /// clone: say which, and for HID over GATT (which BlueZ's input plugin keeps to itself) how to clone it.
    mutating func notes(servicesNotExported recording: CentralRecording) {
        let exported = Set(recording.table.services.map(\.uuid))
        for uuid in recording.connectedProperties?.serviceUUIDs ?? []
        where !exported.contains(uuid) && uuid != .genericAccess && uuid != .genericAttribute {
            let name = uuid.name.map { "\($0) (\(uuid.shortDescription))" } ?? uuid.shortDescription
            let how =
                uuid == BluetoothUUID(0x1812)
                ? ": BlueZ's input plugin keeps HID over GATT to itself — clone with bluetoothd started with --noplugin=input,hog"
                : ""
            replica.notes.append("GATT: the device lists the \(name) service, which BlueZ did not export: it is not in the clone\(how)")
        }
    }

    // MARK: GATT table

    mutating func buildServices() {
        let table = recording.table
        let known = table.services.flatMap { service in
            [service.handle] + service.characteristics.flatMap { [$0.valueHandle] + $0.descriptors.map(\.handle) }
        }.compactMap { $0 }
        var next = Int((known.max() ?? 0).rawValue) + 1
        var synthetic = 0
        var serviceHandles: [DBusObjectPath: AttributeHandle] = [:]
        for service in table.services { if let handle = service.handle { serviceHandles[service.path] = handle } }
        for service in table.services {
            let complete =
                service.handle != nil
                && service.characteristics.allSatisfy { $0.handle != nil && $0.descriptors.allSatisfy { $0.handle != nil } }
            var entry = DeviceReplica.Service(uuid: service.uuid, isPrimary: service.isPrimary, handle: complete ? service.handle : nil)
            entry.includes = service.includes.compactMap { serviceHandles[$0] }
            for characteristic in service.characteristics {
                var valueHandle = characteristic.valueHandle
                if valueHandle == nil, next <= Int(UInt16.max) {
                    valueHandle = AttributeHandle(rawValue: UInt16(next))
                    next += 1
                    synthetic += 1
                }
                var item = DeviceReplica.Characteristic(
                    uuid: characteristic.uuid, properties: characteristic.properties,
                    declarationHandle: characteristic.handle, valueHandle: valueHandle)
                item.security = characteristic.flags.security
                item.descriptors = characteristic.descriptors.map { DeviceReplica.Descriptor(uuid: $0.uuid, handle: $0.handle) }
                if let valueHandle { valueHandles[characteristic.path] = valueHandle }
                for descriptor in characteristic.descriptors {
                    if let handle = descriptor.handle { descriptorHandles[descriptor.path] = handle }
                }
                characteristicsByPath[characteristic.path] = characteristic
                positions[characteristic.path] = (replica.services.count, entry.characteristics.count)
                entry.characteristics.append(item)
            }
            replica.services.append(entry)
        }
        if synthetic > 0 {
            replica.notes.append(
                "GATT: BlueZ gave no handle for \(synthetic) characteristic\(synthetic == 1 ? "" : "s"); stand-in handles name them in the recording, and their services' handles are not pinned"
            )
        }
    }

    /// The characteristic at `path` in the replica, changed by `body`.
    mutating func update(_ path: DBusObjectPath, _ body: (inout DeviceReplica.Characteristic) -> Void) {
        guard let (service, characteristic) = positions[path] else { return }
        body(&replica.services[service].characteristics[characteristic])
    }

    /// The level an error asking for security stands for: authentication when the link was already paired
    /// (and encrypted) and the device still said "insufficient authentication"; else encryption.
    static func level(_ error: RemoteGattError, paired: Bool) -> CharacteristicSecurity.Level {
        error.attError == .insufficientAuthentication && paired ? .authenticated : .encrypted
    }

    mutating func applyReads() {
        var truncated = 0
        for entry in recording.reads {
            let read = entry.read
            switch (entry.target, read.outcome) {
            case (.characteristic, .value(let value, let cut)):
                if cut { truncated += 1 }
                update(read.path) { characteristic in
                    characteristic.value = value
                    characteristic.valueProvenance = "read by the clone"
                    if read.pairedDuringRead {
                        characteristic.security.read = max(characteristic.security.read, .encrypted)
                    }
                }
                if read.pairedDuringRead {
                    replica.notes.append(
                        "\(name(of: read.path)): reading it made BlueZ pair (the device asked for encryption): read access needs encryption"
                    )
                }
            case (.characteristic, .failed(let error)):
                if error.asksForSecurity {
                    let level = Self.level(error, paired: read.pairedAfter)
                    update(read.path) { $0.security.read = max($0.security.read, level) }
                    replica.notes.append(
                        "\(name(of: read.path)): read refused (\(error)): read access needs \(level == .authenticated ? "authentication" : "encryption")"
                    )
                } else {
                    replica.notes.append("\(name(of: read.path)): read failed (\(error)); its value is unknown")
                }
            case (.descriptor, .value(let value, let cut)):
                if cut { truncated += 1 }
                setDescriptor(read.path, value)
            case (.descriptor, .failed(let error)):
                replica.notes.append("descriptor \(read.path.rawValue.split(separator: "/").last ?? ""): read failed (\(error))")
            }
        }
        if truncated > 0 { replica.notes.append("\(truncated) values longer than \(ATTMTU.maximumValueLength) bytes were cut") }
    }

    mutating func setDescriptor(_ path: DBusObjectPath, _ value: [UInt8]) {
        for (serviceIndex, service) in recording.table.services.enumerated() {
            for characteristic in service.characteristics {
                guard let index = characteristic.descriptors.firstIndex(where: { $0.path == path }),
                    let position = positions[characteristic.path], position.service == serviceIndex
                else { continue }
                replica.services[position.service].characteristics[position.characteristic].descriptors[index].value = value
                return
            }
        }
    }

    mutating func applySubscriptions() {
        for subscription in recording.subscriptions {
            guard let error = subscription.error, let characteristic = characteristicsByPath[subscription.path] else { continue }
            if error.asksForSecurity {
                let level = Self.level(error, paired: recording.pairedBefore || recording.pairedDuring)
                let notify = characteristic.properties.contains(.notify)
                update(subscription.path) { item in
                    if notify {
                        item.security.notify = max(item.security.notify, level)
                    } else {
                        item.security.indicate = max(item.security.indicate, level)
                    }
                }
                replica.notes.append(
                    "\(name(of: subscription.path)): subscribing refused (\(error)): \(notify ? "notifications" : "indications") need \(level == .authenticated ? "authentication" : "encryption")"
                )
            } else {
                replica.notes.append("\(name(of: subscription.path)): could not subscribe (\(error))")
            }
        }
    }

    /// The characteristic's UUID (SIG name when known), for notes.
    func name(of path: DBusObjectPath) -> String {
        guard let characteristic = characteristicsByPath[path] else { return path.rawValue }
        return characteristic.uuid.name.map { "\($0) (\(characteristic.uuid.shortDescription))" } ?? characteristic.uuid.shortDescription
    }

    // MARK: Conversation

    mutating func buildConversation() {
        var events: [(Duration, DeviceReplica.Event.Kind)] = [(.zero, .connected(recording.adapterAddress))]
        for entry in recording.reads {
            let read = entry.read
            let handle = entry.target == .characteristic ? valueHandles[read.path] : descriptorHandles[read.path]
            guard let handle else { continue }
            let time = recording.offset(of: read.at)
            switch read.outcome {
            case .value(let value, _): events.append((time, .read(handle: handle, offset: 0, value: value)))
            case .failed(let error):
                if let code = error.attError { events.append((time, .error(handle: handle, request: .readRequest, code: code))) }
            }
        }
        for subscription in recording.subscriptions {
            guard let characteristic = characteristicsByPath[subscription.path], let handle = valueHandles[subscription.path] else {
                continue
            }
            let time = recording.offset(of: subscription.at)
            if subscription.method != nil {
                let notify = characteristic.properties.contains(.notify)
                events.append(
                    (time, .subscribe(handle: handle, notify: notify, indicate: !notify && characteristic.properties.contains(.indicate))))
            } else if let code = subscription.error?.attError,
                let configuration = characteristic.descriptors.first(where: { $0.uuid == .clientCharacteristicConfiguration })?.handle
            {
                events.append((time, .error(handle: configuration, request: .writeRequest, code: code)))
            }
        }
        for notification in recording.notifications {
            guard let characteristic = characteristicsByPath[notification.path], let handle = valueHandles[notification.path] else {
                continue
            }
            let indication = !characteristic.properties.contains(.notify) && characteristic.properties.contains(.indicate)
            events.append(
                (recording.offset(of: notification.at), .notification(handle: handle, value: notification.value, indication: indication)))
        }
        if let end = recording.disconnectedAt { events.append((recording.offset(of: end), .disconnected)) }
        // Stable: events at the same time keep the order they were added in.
        let ordered = events.enumerated().sorted { ($0.element.0, $0.offset) < ($1.element.0, $1.offset) }
        replica.conversation = ordered.map { DeviceReplica.Event($0.element.1, time: max(0, $0.element.0.secondsSinceConnecting)) }
    }

    /// The GAP Device Name (0x2A00), when BlueZ exported the characteristic and it was read.
    var gapName: String? {
        for entry in recording.reads where entry.target == .characteristic {
            guard characteristicsByPath[entry.read.path]?.uuid == .deviceName, case .value(let value, _) = entry.read.outcome,
                !value.isEmpty, let text = String(validating: value, as: UTF8.self)
            else { continue }
            return text
        }
        return nil
    }
}

extension Duration {
    fileprivate var secondsSinceConnecting: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
