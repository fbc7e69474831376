#if canImport(Glibc)
    import Glibc
#endif

/// One command on the kernel's Bluetooth management channel (mgmt, `HCI_CHANNEL_CONTROL`): the interface
/// bluetoothd itself drives controllers with, for the few things its D-Bus API does not offer.
///
/// Each command opens its own socket, waits for the kernel's answer at most `timeout` and closes it: it blocks,
/// so call it off the D-Bus loop (``ControllerManagement`` does). Commands that change a controller need
/// CAP_NET_ADMIN; without it the kernel answers Permission Denied (``ManagementError/status(_:_:)`` 0x14).
enum ManagementSocket {
    /// Management opcodes gattemu uses (Linux `mgmt-api.txt`).
    enum Opcode: UInt16 {
        case readControllerIndexList = 0x0003
        case readControllerInformation = 0x0004
        case setPrivacy = 0x002F
        case setStaticAddress = 0x002B
        case setSecureConnections = 0x002D
        case readControllerConfiguration = 0x0037
        case setPublicAddress = 0x0039

        var name: String {
            switch self {
            case .readControllerIndexList: "Read Controller Index List"
            case .readControllerInformation: "Read Controller Information"
            case .setPrivacy: "Set Privacy"
            case .setStaticAddress: "Set Static Address"
            case .setSecureConnections: "Set Secure Connections"
            case .readControllerConfiguration: "Read Controller Configuration Information"
            case .setPublicAddress: "Set Public Address"
            }
        }
    }

    private static let commandComplete: UInt16 = 0x0001
    private static let commandStatus: UInt16 = 0x0002
    private static let headerLength = 6
    /// Answers longer than this are cut (the socket keeps datagram boundaries); gattemu's answers are < 300 bytes.
    private static let receiveLimit = 1024

    /// Sends `opcode` for controller `index` with `parameters`; returns the return parameters of its Command
    /// Complete event.
    static func send(_ opcode: Opcode, index: UInt16, parameters: [UInt8] = [], timeout: Duration = .seconds(3)) throws(ManagementError)
        -> [UInt8]
    {
        let descriptor = socket(31 /* AF_BLUETOOTH */, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 1 /* BTPROTO_HCI */)
        guard descriptor >= 0 else { throw .unavailable("cannot open a Bluetooth management socket: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        // struct sockaddr_hci { sa_family_t family; unsigned short dev; unsigned short channel; }
        var address: (UInt16, UInt16, UInt16) = (31, 0xFFFF /* HCI_DEV_NONE */, 3 /* HCI_CHANNEL_CONTROL */)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, 6) }
        }
        guard bound == 0 else { throw .unavailable("cannot bind the Bluetooth management channel: \(String(cString: strerror(errno)))") }

        var packet = Self.littleEndian(opcode.rawValue) + Self.littleEndian(index) + Self.littleEndian(UInt16(parameters.count))
        packet += parameters
        // A datagram goes whole or not at all. The kernel answers 0 when it refused the command on the spot (e.g.
        // Permission Denied for a process without CAP_NET_ADMIN): the status event with the reason is queued.
        let written = packet.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written >= 0 else { throw .unavailable("cannot send \(opcode.name): \(String(cString: strerror(errno)))") }

        let deadline = ContinuousClock.now + timeout
        var buffer = [UInt8](repeating: 0, count: receiveLimit)
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw .timedOut(opcode.name) }
            let milliseconds = Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
            var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&waiting, 1, milliseconds)
            if ready < 0, errno == EINTR { continue }
            guard ready >= 0 else { throw .unavailable("waiting for the kernel's answer: \(String(cString: strerror(errno)))") }
            guard ready > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw .unavailable("reading the kernel's answer: \(String(cString: strerror(errno)))") }
            if let answer = try answer(to: opcode, index: index, in: buffer[0..<count]) { return answer }
        }
    }

    /// The return parameters when `event` is the kernel's answer to `opcode` for `index`; nil for any other
    /// event (index added, new settings, …). Throws when the answer is a failure status. Lengths are checked:
    /// nothing here trusts a count it read.
    static func answer(to opcode: Opcode, index: UInt16, in event: ArraySlice<UInt8>) throws(ManagementError) -> [UInt8]? {
        let bytes = Array(event)
        guard bytes.count >= headerLength + 3 else { return nil }
        let code = UInt16(bytes[0]) | UInt16(bytes[1]) << 8
        let eventIndex = UInt16(bytes[2]) | UInt16(bytes[3]) << 8
        let length = Int(UInt16(bytes[4]) | UInt16(bytes[5]) << 8)
        guard code == commandComplete || code == commandStatus, eventIndex == index else { return nil }
        let parameters = bytes[headerLength...].prefix(length)
        guard parameters.count >= 3 else { return nil }
        let answered = UInt16(parameters[parameters.startIndex]) | UInt16(parameters[parameters.startIndex + 1]) << 8
        guard answered == opcode.rawValue else { return nil }
        let status = parameters[parameters.startIndex + 2]
        guard status == 0 else { throw .status(opcode.name, status) }
        // Command Status with success is only an interim answer for commands that complete later.
        guard code == commandComplete else { return nil }
        return Array(parameters.dropFirst(3))
    }

    private static func littleEndian(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
}

/// Why a management command failed; the description is a one-line reason fit for a user.
public enum ManagementError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The socket could not be opened, bound, written or read (no Bluetooth in this kernel, …).
    case unavailable(String)
    /// The kernel answered the command with a failure status.
    case status(String, UInt8)
    /// No answer within the time allowed.
    case timedOut(String)
    /// The controller cannot do what was asked; the reason says why and what to do.
    case refused(String)

    public var description: String {
        switch self {
        case .unavailable(let reason): reason
        case .timedOut(let command): "\(command): the kernel did not answer in time"
        case .refused(let reason): reason
        case .status(let command, let status):
            switch status {
            case 0x14:
                "\(command): permission denied — changing a controller through the kernel's management interface needs CAP_NET_ADMIN (run gattemu as root)"
            case 0x0B: "\(command): rejected by the kernel (is the adapter still powered?)"
            case 0x0C: "\(command): not supported by this controller"
            case 0x0D: "\(command): invalid parameters"
            case 0x11: "\(command): no such controller index"
            case 0x0A: "\(command): the controller is busy"
            default: "\(command): failed with management status 0x\(status < 16 ? "0" : "")\(String(status, radix: 16))"
            }
        }
    }
}
