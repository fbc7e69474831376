import Bluetooth

/// An HCI status or reason code (Core spec Vol 1 Part F): why a connection failed or ended.
public struct HCIStatus: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let success = HCIStatus(rawValue: 0x00)
    public static let unknownConnectionIdentifier = HCIStatus(rawValue: 0x02)
    public static let authenticationFailure = HCIStatus(rawValue: 0x05)
    public static let connectionTimeout = HCIStatus(rawValue: 0x08)
    public static let remoteUserTerminated = HCIStatus(rawValue: 0x13)
    public static let localHostTerminated = HCIStatus(rawValue: 0x16)
    public static let connectionFailedToBeEstablished = HCIStatus(rawValue: 0x3E)

    private static let names: [UInt8: String] = [
        0x00: "success", 0x02: "unknown connection identifier", 0x05: "authentication failure", 0x06: "PIN or key missing",
        0x08: "connection timeout", 0x0C: "command disallowed", 0x13: "remote user terminated the connection",
        0x14: "remote device terminated: low resources", 0x15: "remote device terminated: power off",
        0x16: "local host terminated the connection", 0x1A: "unsupported remote feature", 0x1F: "unspecified error",
        0x22: "LL response timeout", 0x28: "instant passed", 0x3B: "unacceptable connection parameters",
        0x3D: "connection terminated: MIC failure", 0x3E: "connection failed to be established",
    ]

    public var description: String { Self.names[rawValue] ?? "HCI status 0x" + Hex.byte(rawValue) }
}
