import Bluetooth
import McuMgr

/// `"firmware"`: the device is a firmware-update target. Its SMP characteristic (mcumgr's transport: written
/// without response, answered by notification) is answered by the firmware responder instead of rules: image
/// upload, test, confirm and reset as MCUboot does them (docs/firmware.md).
public struct FirmwareDefinition: Sendable, Equatable {
    /// The characteristic carrying SMP (Zephyr's is `DA2E7828-FBCE-4E01-AE9E-261174997C48` in service
    /// `8D53DC1D-1DB7-4CD3-868B-8A527460AA84`).
    public var characteristic: CharacteristicID
    /// The running image's version.
    public var version: McuBootImage.Version
    /// A characteristic whose value is the running version's text (Device Information's Firmware Revision), set
    /// at each boot.
    public var revision: CharacteristicID?
    /// How long the device is gone at a reset: from the disconnection to advertising again.
    public var bootTime: DurationSpec = .milliseconds(2000)
    /// `mcumgr params`: the largest SMP packet taken, and the buffer count.
    public var bufferSize = 2475
    public var bufferCount = 4
    /// The image slots' size: the largest upload.
    public var slotSize = 0x6_0000
    /// Services that only some firmware versions have: each is in the GATT table while the running version is in
    /// its range, so a reboot into another version can change the table (bluetoothd then indicates Service Changed
    /// to each bonded central that enabled it, as it reconnects).
    public var services: [VersionedService] = []
    /// Where the section is in the file.
    public var path = "firmware"

    public init(characteristic: CharacteristicID, version: McuBootImage.Version) {
        self.characteristic = characteristic
        self.version = version
    }

    /// The services absent from the GATT table while `version` runs: those of ``services`` it has not, and of the
    /// others the ones in `absent` (what the version does not decide stays as it was).
    public func absentServices(running version: McuBootImage.Version, besides absent: Set<String>) -> Set<String> {
        absent.subtracting(services.map(\.service)).union(services.filter { !$0.isPresent(running: version) }.map(\.service))
    }

    public static let bufferSizes = 64...65_535
    public static let bufferCounts = 1...64
    public static let slotSizes = 1024...(16 << 20)
}

/// `firmware.services[i]`: a service in the table from version `from` on (inclusive), and before version `before`
/// (exclusive); either bound may be left out.
public struct VersionedService: Sendable, Equatable {
    public var service: String
    public var from: McuBootImage.Version?
    public var before: McuBootImage.Version?
    public var path: String

    public init(service: String, from: McuBootImage.Version? = nil, before: McuBootImage.Version? = nil, path: String = "") {
        self.service = service
        self.from = from
        self.before = before
        self.path = path
    }

    public func isPresent(running version: McuBootImage.Version) -> Bool {
        if let from, version < from { return false }
        if let before, version >= before { return false }
        return true
    }
}

extension DeviceProfile {
    /// What `firmware` says of the table, set once where the table is: the SMP characteristic fragments (the target
    /// notifies its answers already cut, at MTU − 5; a value notified through the control API is cut at the central's
    /// MTU like any `fragment` characteristic's: the client puts a packet together by its header's length), and the
    /// revision characteristic starts as the running version.
    mutating func serve(_ firmware: FirmwareDefinition) {
        for service in services.indices {
            for index in services[service].characteristics.indices {
                let id = services[service].characteristics[index].id
                if id == firmware.characteristic { services[service].characteristics[index].fragment = true }
                if id == firmware.revision {
                    services[service].characteristics[index].value = ValueSource(
                        template: .literal(Array(firmware.version.description.utf8)))
                }
            }
        }
    }
}
