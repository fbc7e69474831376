import Lexical

/// `GET /v1/firmware`: a firmware-update target's slots, as an SMP image state read shows them, the upload under way,
/// and whether the device is rebooting (docs/firmware.md).
public struct FirmwareStatus: ContractType, Equatable {
    public struct Slot: Codable, Sendable, Equatable {
        public var slot: Int
        public var version: String
        /// The image's SHA-256 (its TLV), hex.
        public var hash: String
        public var bootable: Bool
        public var pending: Bool
        public var confirmed: Bool
        public var active: Bool
        public var permanent: Bool
        /// Bytes, for an uploaded image.
        public var size: Int?

        public init(
            slot: Int, version: String, hash: String, bootable: Bool, pending: Bool, confirmed: Bool, active: Bool, permanent: Bool,
            size: Int? = nil
        ) {
            self.slot = slot
            self.version = version
            self.hash = hash
            self.bootable = bootable
            self.pending = pending
            self.confirmed = confirmed
            self.active = active
            self.permanent = permanent
            self.size = size
        }
    }

    public struct Upload: Codable, Sendable, Equatable {
        public var offset: Int
        public var length: Int
        /// The central sending it; absent once it left (the upload stays, to be resumed).
        public var central: String?

        public init(offset: Int, length: Int, central: String? = nil) {
            self.offset = offset
            self.length = length
            self.central = central
        }
    }

    public var slots: [Slot]
    public var upload: Upload?
    public var rebooting: Bool
    public var bufferSize: Int
    public var bufferCount: Int
    public var slotSize: Int

    public init(slots: [Slot], upload: Upload? = nil, rebooting: Bool, bufferSize: Int, bufferCount: Int, slotSize: Int) {
        self.slots = slots
        self.upload = upload
        self.rebooting = rebooting
        self.bufferSize = bufferSize
        self.bufferCount = bufferCount
        self.slotSize = slotSize
    }

    public static let schemaName = "Firmware"
    public static var schema: Schema {
        let slot = Schema.object([
            required("slot", .integer(minimum: 0, maximum: 1)), required("version", .string(minLength: 5)),
            required("hash", .string(pattern: "^[0-9a-f]{64}$")), required("bootable", .boolean), required("pending", .boolean),
            required("confirmed", .boolean), required("active", .boolean), required("permanent", .boolean),
            optional("size", .integer(minimum: 1)),
        ])
        let upload = Schema.object([
            required("offset", .integer(minimum: 0)), required("length", .integer(minimum: 1)),
            optional("central", .string(pattern: Patterns.address)),
        ])
        return .object([
            required("slots", .array(slot, maxItems: 2)), optional("upload", upload), required("rebooting", .boolean),
            required("bufferSize", .integer(minimum: 1)), required("bufferCount", .integer(minimum: 1)),
            required("slotSize", .integer(minimum: 1)),
        ])
    }
    public static var examples: [FirmwareStatus] {
        let running = Slot(
            slot: 0, version: "1.1.0", hash: String(repeating: "ab", count: 32), bootable: true, pending: false, confirmed: false,
            active: true, permanent: false, size: 180_240)
        let previous = Slot(
            slot: 1, version: "1.0.0", hash: String(repeating: "cd", count: 32), bootable: true, pending: false, confirmed: true,
            active: false, permanent: false, size: 176_112)
        return [
            FirmwareStatus(slots: [running, previous], rebooting: false, bufferSize: 2475, bufferCount: 4, slotSize: 393_216),
            FirmwareStatus(
                slots: [previous], upload: Upload(offset: 4096, length: 180_240, central: "AA:BB:CC:DD:EE:01"), rebooting: false,
                bufferSize: 2475, bufferCount: 4, slotSize: 393_216),
        ]
    }
}
