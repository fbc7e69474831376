import BlueZ
import Bluetooth
import DBus
import DeviceClone
import Profile
import Replica

/// The real device as the relay found it: connected on the upstream adapter, its table walked and read, and the
/// profile its mirror runs (the table, the values, the advertisement and security, no rules: the device answers).
public struct RelaySession: Sendable {
    public var device: RemoteDevice
    public var recording: CentralRecording
    /// The device as a replica, with no conversation (the relay records its own).
    public var replica: DeviceReplica
    /// The mirror's profile, loaded from the replica's document (no profile text is written or parsed).
    public var profile: DeviceProfile
    /// The recording's value handle of each remote characteristic.
    public var handles: [DBusObjectPath: AttributeHandle]

    /// Finds the device, connects, walks and reads its table and makes the mirror's profile. On failure the device
    /// is left disconnected.
    public static func attach(
        _ query: DeviceQuery, adapter: Adapter, options: DeviceRecorder.Options = DeviceRecorder.Options(),
        progress: @escaping DeviceRecorder.Progress = { _ in }
    ) async throws(RelayError) -> RelaySession {
        var (recording, device) = try await Self.attachDevice(query, adapter: adapter, options: options, progress: progress)
        var replica = CloneReplica.make(recording)
        replica.source = "relay of \(replica.address?.description ?? device.path.rawValue) on \(adapter.name)"
        replica.conversation = []
        var handles: [DBusObjectPath: AttributeHandle] = [:]
        for (remote, recorded) in zip(recording.table.characteristics, replica.characteristics.map(\.characteristic)) {
            if let handle = recorded.valueHandle { handles[remote.path] = handle }
        }
        let file = "relay of \(device.label).json"
        let document = ReplicaProfile(replica).build().json.located(at: file)
        do {
            let profile = try ProfileLoader.load(document: document, file: file)
            return RelaySession(device: device, recording: recording, replica: replica, profile: profile, handles: handles)
        } catch {
            await DeviceRecorder.release(device, &recording, options: options)
            throw .profile(error.description)
        }
    }

    private static func attachDevice(
        _ query: DeviceQuery, adapter: Adapter, options: DeviceRecorder.Options, progress: @escaping DeviceRecorder.Progress
    ) async throws(RelayError) -> (CentralRecording, RemoteDevice) {
        do {
            return try await DeviceRecorder.attach(query, adapter: adapter, options: options, progress: progress)
        } catch {
            throw .device(error)
        }
    }

    /// The device as recorded through the relay: its table and values, and the conversation as replay rules.
    public func recordedReplica(_ conversation: RelayRecording.Conversation) -> DeviceReplica {
        var replica = self.replica
        let (events, dropped) = (conversation.events, conversation.dropped)
        replica.conversation = events
        // As `gattemu import` does: a characteristic nothing was read from keeps the value it last notified.
        var notified: [AttributeHandle: (value: [UInt8], time: Double?)] = [:]
        for event in events {
            if case .notification(let handle, let value, _) = event.kind { notified[handle] = (value, event.time) }
        }
        for (serviceIndex, service) in replica.services.enumerated() {
            for (index, characteristic) in service.characteristics.enumerated() where characteristic.value == nil {
                guard let handle = characteristic.valueHandle, let last = notified[handle] else { continue }
                replica.services[serviceIndex].characteristics[index].value = last.value
                replica.services[serviceIndex].characteristics[index].valueProvenance =
                    "last notified through the relay" + (last.time.map { " at \(Int($0 * 1000)) ms" } ?? "")
            }
        }
        if dropped > 0 {
            replica.notes.append("relay: kept the first \(RelayRecording.maximumEvents) operations; \(dropped) more were not recorded")
        }
        return replica
    }
}

/// Why the relay could not start; the description is a one-line reason.
public enum RelayError: Error, Sendable, CustomStringConvertible {
    /// Finding, connecting to or reading the device failed.
    case device(CentralError)
    /// The profile made from the device does not load (a gattemu bug).
    case profile(String)

    public var description: String {
        switch self {
        case .device(let error): error.description
        case .profile(let problem): "the profile made from the device does not load: \(problem)"
        }
    }
}
