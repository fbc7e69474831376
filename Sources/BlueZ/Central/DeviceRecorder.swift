import Bluetooth
import DBus
import TextEscaping

/// Records a remote device as a central: scans for it, records its advertisement, connects, walks its GATT
/// table, reads everything readable, optionally listens to everything that notifies, disconnects.
///
/// Reading and subscribing errors are recorded, not fatal; finding and connecting errors end the recording.
public enum DeviceRecorder {
    public struct Options: Sendable {
        public var scanTimeout: Duration = .seconds(20)
        /// How long discovery goes on after the first match (scan response, a second device of that name).
        public var settle: Duration = .seconds(2)
        public var connectTimeout: Duration = .seconds(30)
        public var connectAttempts = 3
        public var readTimeout: Duration = .seconds(10)
        /// How long to listen to notifications; zero subscribes to nothing.
        public var listen: Duration = .zero
        /// Try `AcquireNotify` before `StartNotify`.
        public var preferAcquireNotify = true
        /// Remove the device from the adapter afterwards when it was not paired before (leaves no cache and no
        /// pairing BlueZ made on its own behind).
        public var forgetAfterwards = true

        public init() {}
    }

    /// What the recorder is doing, for a progress line.
    public typealias Progress = @Sendable (String) -> Void

    public static func record(
        _ query: DeviceQuery, adapter: Adapter, options: Options = Options(), progress: Progress = { _ in }
    ) async throws(CentralError) -> CentralRecording {
        var (recording, device) = try await find(query, adapter: adapter, options: options, progress: progress)
        do {
            try await walk(device, into: &recording, options: options, progress: progress)
        } catch {
            await finish(device, &recording, options: options)
            throw error
        }
        await finish(device, &recording, options: options)
        return recording
    }

    /// Finds, connects, walks and reads the device as ``record(_:adapter:options:progress:)`` does (without
    /// listening), and leaves it connected: the recording so far and the device, for `gattemu relay`. End with
    /// ``release(_:_:options:)``.
    public static func attach(
        _ query: DeviceQuery, adapter: Adapter, options: Options = Options(), progress: Progress = { _ in }
    ) async throws(CentralError) -> (CentralRecording, RemoteDevice) {
        var (recording, device) = try await find(query, adapter: adapter, options: options, progress: progress)
        var walking = options
        walking.listen = .zero
        do {
            try await walk(device, into: &recording, options: walking, progress: progress)
        } catch {
            await finish(device, &recording, options: options)
            throw error
        }
        return (recording, device)
    }

    /// Disconnects an attached device (unless it did), forgets it when `options` say, stops following it.
    public static func release(_ device: RemoteDevice, _ recording: inout CentralRecording, options: Options = Options()) async {
        await finish(device, &recording, options: options)
    }

    /// Scans for the device, records its advertisement and starts following it.
    private static func find(
        _ query: DeviceQuery, adapter: Adapter, options: Options, progress: Progress
    ) async throws(CentralError) -> (CentralRecording, RemoteDevice) {
        progress("scanning on \(adapter.name) for \(query) (up to \(options.scanTimeout.wholeSeconds) s)")
        let discovery = try await DeviceDiscovery.start(on: adapter, forgetting: query)
        let found: DeviceProperties
        do {
            found = try await discovery.find(query, timeout: options.scanTimeout, settle: options.settle)
        } catch {
            await discovery.stop()
            throw error
        }
        // BlueZ stops following a device's advertisements' RSSI and TX power when discovery stops: keep
        // them as they were during the scan.
        let advertisement = discovery.device(at: found.path) ?? found
        let forgotten = discovery.forgottenDevices
        await discovery.stop()
        var recording = CentralRecording(
            adapterName: adapter.name, adapterAddress: adapter.address == .zero ? nil : adapter.address, advertisement: advertisement)
        recording.notes += advertisement.discarded.map { "advertisement: \($0)" }
        if !forgotten.isEmpty {
            recording.notes.append(
                "forgot \(forgotten.count) cached device object\(forgotten.count == 1 ? "" : "s") before scanning, so that the advertisement is fresh"
            )
        }
        progress(
            "found \(advertisement.address?.description ?? advertisement.path.rawValue)"
                + (advertisement.name.map { " \"\(TerminalText.escaped($0, limit: 120))\"" } ?? "")
                + (advertisement.rssi.map { ", \($0) dBm" } ?? ""))

        let device = try await RemoteDevice.follow(advertisement, adapter: adapter)
        recording.pairedBefore = device.properties.paired
        return (recording, device)
    }

    /// How many connections a walk may take: reads bluetoothd could not have the device answer (see
    /// ``RemoteGattError/mayNotBeTheDevicesAnswer``) are made again, table and all, on a new connection.
    static let walkConnections = 2

    private static func walk(
        _ device: RemoteDevice, into recording: inout CentralRecording, options: Options, progress: Progress
    ) async throws(CentralError) {
        // Reads that made BlueZ pair on an earlier connection: the device asked for encryption there, though on the
        // next connection (encrypted from the start) it does not ask again.
        var pairedFor: Set<DBusObjectPath> = []
        for connection in 1...walkConnections {
            progress("connecting to \(device.label)" + (connection > 1 ? " again" : ""))
            do {
                recording.connectAttempt = try await device.connect(timeout: options.connectTimeout, attempts: options.connectAttempts) {
                    attempt, reason in
                    progress("connection attempt \(attempt) (the last one failed: \(reason))")
                }
            } catch {
                guard connection > 1, let why = recording.notes.last else { throw error }
                throw .lost(address: device.label, reason: "\(why); connecting again failed: \(error)")
            }
            // The connection whose walk is kept owns the times (the conversation is measured from it).
            recording.connectedAt = .now
            recording.connectedProperties = device.properties
            let (table, found) = try await readTable(device, options: options, progress: progress)
            var reads = found
            for index in reads.indices {
                if reads[index].read.pairedDuringRead { pairedFor.insert(reads[index].read.path) }
                if pairedFor.contains(reads[index].read.path) { reads[index].read.pairedDuringRead = true }
            }
            let unanswered = reads.compactMap { read -> RemoteGattError? in
                guard case .failed(let error) = read.read.outcome, error.mayNotBeTheDevicesAnswer else { return nil }
                return error
            }
            let last = connection == walkConnections
            if unanswered.isEmpty || last {
                if let error = unanswered.first(where: \.isNoAnswer) {
                    let count = unanswered.filter(\.isNoAnswer).count
                    throw .lost(
                        address: device.label,
                        reason: "\(count) of \(reads.count) reads got no answer from the device on \(walkConnections) connections "
                            + "(the first: \(error)), though BlueZ says it is connected")
                }
                recording.table = table
                recording.notes += table.notes
                recording.reads = reads
                break
            }
            let reason = "\(unanswered.count) of \(reads.count) reads may not have reached the device (the first: \(unanswered[0]))"
            progress("\(reason): reading the table again on a new connection")
            recording.notes.append("\(reason) on the first connection; its table was walked and read again on a new one")
            await device.disconnect()
            guard !device.isGone else {
                throw .lost(address: device.label, reason: "bluetoothd removed it after \(reason)")
            }
            // A link still up would be the same link again, without its ATT bearer.
            guard device.link.isDown else {
                throw .lost(address: device.label, reason: "\(reason), and the link would not drop to be made again")
            }
        }
        let failed = recording.reads.filter { if case .failed = $0.read.outcome { true } else { false } }.count
        progress("read \(recording.reads.count - failed) values" + (failed > 0 ? ", \(failed) reads refused" : ""))

        guard options.listen > .zero, device.properties.connected else { return }
        let listener = try await NotificationListener.start(
            recording.table.characteristics, device: device.path, stack: device.adapter.stack, preferAcquire: options.preferAcquireNotify)
        let subscribed = listener.subscriptions.filter { $0.method != nil }.count
        progress("listening to \(subscribed) characteristic\(subscribed == 1 ? "" : "s") for \(options.listen.wholeSeconds) s")
        let start = ContinuousClock.now
        let end = start + options.listen
        _ = await device.wait(until: end) { $0.isDown }  // the listening time, or until the device leaves
        recording.listened = ContinuousClock.now - start
        await listener.stop()
        recording.subscriptions = listener.subscriptions
        recording.notifications = listener.received
        recording.droppedNotifications = listener.dropped
        if listener.dropped > 0 {
            recording.notes.append(
                "kept the first \(NotificationListener.maximumNotifications) notifications; \(listener.dropped) more were dropped")
        }
        progress("\(listener.received.count) notification\(listener.received.count == 1 ? "" : "s") received")
    }

    /// Walks the connected device's table and reads everything readable, characteristics and their descriptors.
    private static func readTable(
        _ device: RemoteDevice, options: Options, progress: Progress
    ) async throws(CentralError) -> (RemoteGattTable, [CentralRecording.Read]) {
        let table = try await RemoteGattTable.read(device: device.path, stack: device.adapter.stack)
        try checkConnected(device, "before its GATT table was read")
        let characteristics = table.characteristics
        progress(
            "\(table.services.count) services, \(characteristics.count) characteristics, "
                + "\(characteristics.reduce(0) { $0 + $1.descriptors.count }) descriptors (handles from \(table.handleSource.rawValue))")
        var reads: [CentralRecording.Read] = []
        for (index, characteristic) in characteristics.enumerated() {
            try checkConnected(device, "after \(index) of \(characteristics.count) characteristics were read")
            if characteristic.properties.contains(.read) {
                reads.append(
                    .init(
                        target: .characteristic,
                        read: await RemoteRead.read(
                            characteristic.path, interface: BlueZNames.gattCharacteristic, device: device, timeout: options.readTimeout)))
            }
            for descriptor in characteristic.descriptors {
                reads.append(
                    .init(
                        target: .descriptor,
                        read: await RemoteRead.read(
                            descriptor.path, interface: BlueZNames.gattDescriptor, device: device, timeout: options.readTimeout)))
            }
        }
        // A read that failed because the link went down is no answer of the device's.
        try checkConnected(device, "while its \(characteristics.count) characteristics were read")
        return (table, reads)
    }

    /// Throws ``CentralError/lost(address:reason:)`` unless the device is still connected: a clone missing
    /// part of the table or of the values would pass for the device.
    private static func checkConnected(_ device: RemoteDevice, _ when: String) throws(CentralError) {
        guard !device.properties.connected else { return }
        throw .lost(address: device.label, reason: (device.isGone ? "bluetoothd removed it " : "it disconnected ") + when)
    }

    /// Disconnects (unless the device did), forgets the device when asked, stops following it.
    private static func finish(_ device: RemoteDevice, _ recording: inout CentralRecording, options: Options) async {
        let connected = device.properties.connected
        recording.deviceDisconnected = !connected && recording.connectedProperties != nil
        if recording.deviceDisconnected { recording.notes.append("the device disconnected by itself") }
        if connected { await device.disconnect() }
        recording.disconnectedAt = .now
        recording.pairedDuring = !recording.pairedBefore && device.properties.paired
        if recording.pairedDuring { recording.notes.append("BlueZ paired with the device during the recording (it asked for encryption)") }
        if options.forgetAfterwards, !recording.pairedBefore { await device.forget() }
        await device.stop()
    }
}
