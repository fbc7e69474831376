import Bluetooth

/// A peripheral as seen from outside — its advertisement, GATT table, values and what it said to a central —
/// recorded from a capture (`gattemu import`) or from the live device (`gattemu clone`).
///
/// Characteristics and the conversation refer to each other by ATT value handle; ``ReplicaProfile`` turns
/// a replica into a profile. Everything carries where it came from (`provenance`), for the profile's
/// descriptions and the import report.
public struct DeviceReplica: Sendable {
    /// What this was made from, e.g. `capture phone.btsnoop` or `clone of D0:1F:A6:44:B3:6F on hci0`.
    public var source: String
    public var address: BluetoothAddress?
    public var addressType: AddressType?
    /// The GAP Device Name (0x2A00) if it was read, else the advertised name.
    public var name: String?
    public var advertisingData: AdvertisingData?
    public var scanResponse: AdvertisingData?
    /// Where the advertisement came from (frames, times), for its description.
    public var advertisingProvenance: String?
    /// The advertisement came as extended advertising (Bluetooth 5) on this secondary PHY; nil: legacy advertising.
    public var secondaryChannel: SecondaryChannel?
    public var services: [Service] = []
    /// The ATT MTU the central and the device agreed on, when seen.
    public var mtu: UInt16?
    public var security = SecurityObservation()
    /// What happened between the central and the device, in order.
    public var conversation: [Event] = []
    /// The LE credit-based channels (L2CAP, by PSM) the central opened on the device, and their SDUs.
    public var channels: [ChannelRecording] = []
    /// Lines for the report: what was reconstructed, what was missing, what replay cannot do.
    public var notes: [String] = []

    public init(source: String) { self.source = source }

    /// A primary or secondary service.
    public struct Service: Sendable, Hashable {
        public var uuid: BluetoothUUID
        public var isPrimary = true
        /// The service declaration's handle and the last handle of its group, when known.
        public var handle: AttributeHandle?
        public var endHandle: AttributeHandle?
        /// Handles of included services.
        public var includes: [AttributeHandle] = []
        public var characteristics: [Characteristic] = []
        public var provenance: String?

        public init(uuid: BluetoothUUID, isPrimary: Bool = true, handle: AttributeHandle? = nil, endHandle: AttributeHandle? = nil) {
            self.uuid = uuid
            self.isPrimary = isPrimary
            self.handle = handle
            self.endHandle = endHandle
        }
    }

    /// A characteristic with the value last read or notified.
    public struct Characteristic: Sendable, Hashable {
        public var uuid: BluetoothUUID
        public var properties: CharacteristicProperties
        /// Security levels learned from errors (insufficient authentication or encryption) and pairing.
        public var security = CharacteristicSecurity()
        public var declarationHandle: AttributeHandle?
        public var valueHandle: AttributeHandle?
        public var value: [UInt8]?
        public var valueProvenance: String?
        public var descriptors: [Descriptor] = []
        public var provenance: String?

        public init(
            uuid: BluetoothUUID, properties: CharacteristicProperties, declarationHandle: AttributeHandle? = nil,
            valueHandle: AttributeHandle? = nil
        ) {
            self.uuid = uuid
            self.properties = properties
            self.declarationHandle = declarationHandle
            self.valueHandle = valueHandle
        }
    }

    public struct Descriptor: Sendable, Hashable {
        public var uuid: BluetoothUUID
        public var handle: AttributeHandle?
        public var value: [UInt8]?

        public init(uuid: BluetoothUUID, handle: AttributeHandle? = nil, value: [UInt8]? = nil) {
            self.uuid = uuid
            self.handle = handle
            self.value = value
        }
    }

    /// Pairing and security as seen in the capture (or the clone).
    public struct SecurityObservation: Sendable, Hashable {
        /// A pairing request or response was seen.
        public var pairingSeen = false
        /// The device's IO capability (SMP), bonding, MITM and Secure Connections bits of its pairing response.
        public var ioCapability: UInt8?
        public var bonding: Bool?
        public var mitm: Bool?
        public var secureConnections: Bool?
        /// The device refused pairing (SMP Pairing Failed it sent), with the reason code.
        public var refusedWith: UInt8?
        /// The link was encrypted at some point.
        public var encrypted = false

        public init() {}
    }

    /// One thing the central or the device did.
    public struct Event: Sendable, Hashable {
        public enum Kind: Sendable, Hashable {
            /// A central connected (its address, when known).
            case connected(BluetoothAddress?)
            case disconnected
            /// The central read `handle` (at `offset`) and got `value`.
            case read(handle: AttributeHandle, offset: Int, value: [UInt8])
            /// The central wrote `value` to `handle`; `withResponse` for Write Requests (and long writes).
            case write(handle: AttributeHandle, value: [UInt8], withResponse: Bool)
            /// The device notified or indicated `value` on `handle`.
            case notification(handle: AttributeHandle, value: [UInt8], indication: Bool)
            /// The central enabled or disabled notifications/indications on the characteristic of `handle`
            /// (its value handle).
            case subscribe(handle: AttributeHandle, notify: Bool, indicate: Bool)
            /// The device answered an operation on `handle` with an ATT error.
            case error(handle: AttributeHandle, request: ATTOpcode, code: ATTErrorCode)
        }

        public var kind: Kind
        /// Seconds since the start of the recording, when known.
        public var time: Double?
        /// The capture's frame number, when it comes from a capture.
        public var frame: Int?
        /// Which connection of the recording (from 1).
        public var connection: Int

        public init(_ kind: Kind, time: Double? = nil, frame: Int? = nil, connection: Int = 1) {
            self.kind = kind
            self.time = time
            self.frame = frame
            self.connection = connection
        }
    }

    /// Every characteristic, with the service it belongs to.
    public var characteristics: [(service: Service, characteristic: Characteristic)] {
        services.flatMap { service in service.characteristics.map { (service, $0) } }
    }

    /// The characteristic whose value handle (or a descriptor handle) is `handle`.
    public func characteristic(at handle: AttributeHandle) -> Characteristic? {
        characteristics.first { $0.characteristic.valueHandle == handle }?.characteristic
    }
}
