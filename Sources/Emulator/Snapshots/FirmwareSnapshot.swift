import Bluetooth

/// A firmware-update target's state (`GET /v1/firmware`): its slots as an SMP state read shows them, the upload under
/// way and whether the device is rebooting.
public struct FirmwareSnapshot: Sendable, Equatable {
    public struct Slot: Sendable, Equatable {
        public var slot: Int
        public var version: String
        public var hash: [UInt8]
        public var bootable: Bool
        public var pending: Bool
        public var confirmed: Bool
        public var active: Bool
        public var permanent: Bool
        /// The image's size in bytes, when it was uploaded (nil for the image the profile says runs).
        public var size: Int?
    }

    public struct Upload: Sendable, Equatable {
        /// Bytes received, of `length`.
        public var offset: Int
        public var length: Int
        /// The central sending it; nil once it left (the upload stays, to be resumed).
        public var central: BluetoothAddress?
    }

    /// Slot 0 (running) and, when it holds an image, slot 1.
    public var slots: [Slot]
    public var upload: Upload?
    /// Reset: the device is gone for the profile's boot time.
    public var rebooting: Bool
    public var bufferSize: Int
    public var bufferCount: Int
    public var slotSize: Int
}
