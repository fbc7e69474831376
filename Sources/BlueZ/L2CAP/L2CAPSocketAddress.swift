import Bluetooth

#if canImport(Glibc)
    import Glibc
#endif

/// The kernel's constants for L2CAP sockets (include/net/bluetooth/bluetooth.h and l2cap.h), which Glibc does not
/// carry.
enum L2CAPKernel {
    static let addressFamily: Int32 = 31  // AF_BLUETOOTH
    static let protocolL2CAP: Int32 = 0  // BTPROTO_L2CAP
    static let solBluetooth: Int32 = 274  // SOL_BLUETOOTH
    static let optionSecurity: Int32 = 4  // BT_SECURITY: struct bt_security { u8 level; u8 key_size; }
    static let optionDeferSetup: Int32 = 7  // BT_DEFER_SETUP: u32
    static let optionSendMTU: Int32 = 12  // BT_SNDMTU: u16, read-only, once connected
    static let optionReceiveMTU: Int32 = 13  // BT_RCVMTU: u16, after bind, before listen
    static let addressTypeLEPublic: UInt8 = 1  // BDADDR_LE_PUBLIC
    static let addressTypeLERandom: UInt8 = 2  // BDADDR_LE_RANDOM
}

/// `struct sockaddr_l2` as bytes: family (u16), PSM (le16), the address (6 bytes, little endian), CID (le16), address
/// type (u8) and one byte of padding: 14 bytes, built by hand rather than trusting a Swift struct's layout.
struct L2CAPSocketAddress: Equatable {
    static let size = 14

    var psm: UInt16
    var address: BluetoothAddress
    var addressType: UInt8

    var bytes: [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Self.size)
        bytes[0] = UInt8(L2CAPKernel.addressFamily & 0xFF)
        bytes[1] = UInt8(L2CAPKernel.addressFamily >> 8)
        bytes[2] = UInt8(psm & 0xFF)
        bytes[3] = UInt8(psm >> 8)
        bytes.replaceSubrange(4..<10, with: address.littleEndian)
        bytes[12] = addressType
        return bytes
    }

    /// Reads one the kernel filled in; nil for anything shorter or of another family.
    init?(bytes: [UInt8], length: Int) {
        guard length >= 13, bytes.count >= 13, Int32(bytes[0]) | Int32(bytes[1]) << 8 == L2CAPKernel.addressFamily,
            let address = BluetoothAddress(littleEndian: bytes[4..<10])
        else { return nil }
        psm = UInt16(bytes[2]) | UInt16(bytes[3]) << 8
        self.address = address
        addressType = bytes[12]
    }

    init(psm: UInt16, address: BluetoothAddress, addressType: UInt8) {
        self.psm = psm
        self.address = address
        self.addressType = addressType
    }

    /// The address of the socket (`getsockname`) or of its peer (`getpeername`).
    static func of(_ descriptor: Int32, peer: Bool) -> L2CAPSocketAddress? {
        var storage = [UInt8](repeating: 0, count: 32)
        var length = socklen_t(storage.count)
        let result = storage.withUnsafeMutableBytes { raw in
            raw.withMemoryRebound(to: sockaddr.self) { pointer in
                peer ? getpeername(descriptor, pointer.baseAddress, &length) : getsockname(descriptor, pointer.baseAddress, &length)
            }
        }
        guard result == 0 else { return nil }
        return L2CAPSocketAddress(bytes: storage, length: Int(length))
    }
}

/// What went wrong with an L2CAP socket: the call and its errno.
public struct L2CAPError: Error, Sendable, CustomStringConvertible {
    public var call: String
    public var code: Int32

    public var description: String {
        let reason = String(cString: strerror(code))
        switch (call, code) {
        case ("socket", EAFNOSUPPORT), ("socket", EPROTONOSUPPORT):
            return "the kernel has no Bluetooth L2CAP sockets (\(reason))"
        case ("bind", EADDRINUSE):
            return "the PSM is taken by another program on this adapter (\(reason))"
        case ("bind", EACCES):
            return "PSMs under 0x0080 need CAP_NET_BIND_SERVICE (\(reason))"
        case ("bind", EINVAL):
            return "the kernel refused the PSM (\(reason)); with \"any\", no PSM of 0x0080–0x00FF is free"
        default:
            return "\(call): \(reason)"
        }
    }
}

/// A channel's required link security as the kernel numbers it (`BT_SECURITY_LOW` … `BT_SECURITY_FIPS`).
public enum L2CAPSecurityLevel: UInt8, Sendable, Comparable {
    case low = 1, medium = 2, high = 3, fips = 4

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
