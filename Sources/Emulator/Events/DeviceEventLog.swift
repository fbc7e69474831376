import BlueZ
import Bluetooth

/// One device's view of the process's ``EventLog``: what the device records carries its id (`device` in the
/// JSON), so that a rig's devices share one log, one sequence and one stream. A lone device records untagged.
public struct DeviceEventLog: Sendable {
    /// The log every device of the process writes to.
    public let shared: EventLog
    /// The device's id in the rig; nil for a process that runs one device.
    public let device: String?

    public init(_ shared: EventLog, device: String? = nil) {
        self.shared = shared
        self.device = device
    }

    /// Records an event of `central` (nil: of no central), tagged with the device.
    public func record(
        _ kind: EmulatorEvent.Kind, central: BluetoothAddress? = nil, characteristic: CharacteristicID? = nil, descriptor: String? = nil,
        value: [UInt8]? = nil, detail: String? = nil, mtu: Int? = nil, progress: EmulatorEvent.Progress? = nil
    ) {
        let characteristic = characteristic.map { GattAttributeID(characteristic: $0, descriptor: descriptor).description }
        shared.record(
            EmulatorEvent(
                time: shared.now, kind: kind, central: central, characteristic: characteristic, value: value, detail: detail, mtu: mtu,
                device: device, progress: progress))
    }

    public func record(_ event: EmulatorEvent) {
        var event = event
        event.device = device
        shared.record(event)
    }

    public var lastSequence: Int { shared.lastSequence }
}
