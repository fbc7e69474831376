import Bluetooth

/// A GATT service to export, with its characteristics.
public struct GattServiceDefinition: Sendable, Equatable {
    public var id: String
    public var uuid: BluetoothUUID
    public var primary: Bool
    /// Ids of other services of the same application this one includes.
    public var includes: [String]
    public var characteristics: [GattCharacteristicDefinition]
    /// The handle to ask BlueZ for (the service declaration's); nil: BlueZ chooses.
    public var handle: AttributeHandle?

    public init(
        id: String, uuid: BluetoothUUID, primary: Bool = true, includes: [String] = [], characteristics: [GattCharacteristicDefinition],
        handle: AttributeHandle? = nil
    ) {
        self.id = id
        self.uuid = uuid
        self.primary = primary
        self.includes = includes
        self.characteristics = characteristics
        self.handle = handle
    }

    /// The same service with no handle asked for anywhere in it.
    public var withoutHandles: GattServiceDefinition {
        var copy = self
        copy.handle = nil
        copy.characteristics = characteristics.map { characteristic in
            var copy = characteristic
            copy.handle = nil
            copy.descriptors = characteristic.descriptors.map {
                var descriptor = $0
                descriptor.handle = nil
                return descriptor
            }
            return copy
        }
        return copy
    }

    /// Whether a handle is asked for anywhere in the service.
    public var asksForHandles: Bool { self != withoutHandles }
}

/// How notifications and indications of a characteristic reach bluetoothd.
public enum GattNotifyPath: String, Sendable, Equatable {
    /// `PropertiesChanged("Value")`: one signal, every subscribed central.
    case propertiesChanged
    /// `AcquireNotify`: a socket per subscription. BlueZ 5.66 opens one socket per characteristic,
    /// reaching every subscriber; newer BlueZ opens one per central, so a notification can target one.
    case acquireNotify
}

/// A GATT characteristic to export.
public struct GattCharacteristicDefinition: Sendable, Equatable {
    public var id: CharacteristicID
    public var uuid: BluetoothUUID
    public var flags: CharacteristicFlags
    /// The value `Value` reports before any read or write.
    public var initialValue: [UInt8]
    public var notifyPath: GattNotifyPath
    public var descriptors: [GattDescriptorDefinition]
    /// The handle to ask BlueZ for (the value's; the declaration takes the one before); nil: BlueZ chooses.
    public var handle: AttributeHandle?

    public init(
        id: CharacteristicID, uuid: BluetoothUUID, flags: CharacteristicFlags, initialValue: [UInt8] = [],
        notifyPath: GattNotifyPath = .propertiesChanged,
        descriptors: [GattDescriptorDefinition] = [], handle: AttributeHandle? = nil
    ) {
        self.handle = handle
        self.id = id
        self.uuid = uuid
        self.flags = flags
        self.initialValue = initialValue
        self.notifyPath = notifyPath
        self.descriptors = descriptors
    }
}

/// A descriptor to export; BlueZ owns the CCCD (0x2902), so it is never declared here.
public struct GattDescriptorDefinition: Sendable, Equatable {
    public var id: String
    public var uuid: BluetoothUUID
    /// Only `read`, `write`, their security and `authorize` apply to a descriptor.
    public var flags: CharacteristicFlags
    public var initialValue: [UInt8]
    /// The handle to ask BlueZ for; nil: BlueZ chooses.
    public var handle: AttributeHandle?

    public init(
        id: String, uuid: BluetoothUUID, flags: CharacteristicFlags = CharacteristicFlags(properties: .read), initialValue: [UInt8] = [],
        handle: AttributeHandle? = nil
    ) {
        self.handle = handle
        self.id = id
        self.uuid = uuid
        self.flags = flags
        self.initialValue = initialValue
    }
}

/// Answers the requests bluetoothd forwards from centrals; every method may suspend (e.g. for a delay).
public protocol GattRequestHandler: Sendable {
    /// The value to return from `request.offset` on (the handler applies the offset).
    func read(_ request: GattReadRequest) async throws(ATTError) -> [UInt8]
    func write(_ request: GattWriteRequest) async throws(ATTError)
    func subscriptionChanged(_ change: GattSubscriptionChange) async
    /// A central confirmed an indication of `characteristic`.
    func indicationConfirmed(characteristic: CharacteristicID) async
}
