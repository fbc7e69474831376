import BlueZ
import Bluetooth
import Profile

/// The emulator at one moment, in its own terms: what `GET /v1/status` shows once `Control` has put it in the
/// contract's form.
public struct EmulatorStatus: Sendable, Equatable {
    /// The adapter gattemu registered with.
    public struct Adapter: Sendable, Equatable {
        public var name: String
        /// Nil when bluetoothd gave no address gattemu can read.
        public var address: BluetoothAddress?
        public var alias: String?
        /// True while the adapter shows resolvable private addresses gattemu set (``Emulator/changeAddress(_:)``).
        public var privateAddresses: Bool
    }

    /// Advertising: whether it is on, the variant, and the advertisements registered (or to be).
    public struct Advertising: Sendable, Equatable {
        /// Registered with bluetoothd now.
        public var advertised: Bool
        /// The profile's behaviour wants to advertise.
        public var wanted: Bool
        public var variant: String?
        public var variants: [String]
        /// The advertisements of the current variant, as bluetoothd gets them.
        public var advertisements: [Advertisement]
        /// One line for each of ``advertisements``.
        public var descriptions: [String]
        /// Each of ``advertisements``' bytes against the adapter's limits.
        public var budgets: [AdvertisementBudget]
    }

    /// A connected central.
    public struct Central: Sendable, Equatable {
        public var address: BluetoothAddress
        /// The ATT MTU of its link, once bluetoothd told it.
        public var mtu: UInt16?
        /// The characteristics it subscribed to, sorted.
        public var subscriptions: [CharacteristicID]
        /// Its own `connectionState` values as text; nil when the profile has none.
        public var state: [String: String]?
    }

    /// A service of the GATT table as it is served.
    public struct Service: Sendable, Equatable {
        public var id: String
        public var uuid: Bluetooth.BluetoothUUID
        public var primary: Bool
        /// The handle bluetoothd assigned, once registered.
        public var handle: AttributeHandle?
        public var characteristics: [Characteristic]
    }

    public struct Characteristic: Sendable, Equatable {
        public var id: CharacteristicID
        public var uuid: Bluetooth.BluetoothUUID
        /// The profile's flags, in its order (BlueZ's: more than the ATT properties, e.g. `encrypt-read`).
        public var flags: [CharacteristicFlag]
        public var handle: AttributeHandle?
        /// The value now.
        public var value: [UInt8]
        /// The longest value it takes.
        public var maxLength: Int
        public var descriptors: [Descriptor]
    }

    public struct Descriptor: Sendable, Equatable {
        /// Nil for the descriptors the profile gave no id.
        public var id: String?
        public var uuid: Bluetooth.BluetoothUUID
        public var flags: [DescriptorFlag]
        public var value: [UInt8]
    }

    /// A variable or state value.
    public struct NamedValue: Sendable, Equatable {
        public var name: String
        /// True for state (reset with the behaviour), false for a variable.
        public var isState: Bool
        /// The value now; its kind is the profile's.
        public var value: ProfileValue
        /// A `connectionState` value: one for each central (``value`` is the initial one).
        public var perCentral: Bool
    }

    /// The profile file.
    public var profile: String
    public var deviceName: String?
    public var adapter: Adapter?
    public var advertising: Advertising
    public var centrals: [Central]
    public var services: [Service]
    public var variables: [String: ProfileValue]
    public var state: [String: ProfileValue]
    public var values: [NamedValue]
    /// Ids of the timers running, sorted.
    public var timers: [String]
    public var triggers: [String]
    public var triggerDescriptions: [String: String]
    public var faults: [ActiveFault]
    /// The profile's faults, which can be installed again.
    public var faultPresets: [FaultSpec]
    /// The sequence number of the last event logged.
    public var lastEvent: Int
    /// Whether the device is a firmware-update target (the profile's `firmware` section; `GET /v1/firmware`).
    public var firmware = false
}
