/// Facts of LE credit-based L2CAP channels (Core spec, Vol 3, Part A) that profiles, captures and the kernel agree on.
public enum LECreditBasedChannel {
    /// LE PSMs: 0x0001–0x007F are assigned by the Bluetooth SIG, 0x0080–0x00FF are for anyone.
    public static let psms: ClosedRange<UInt16> = 0x0001...0x00FF
    /// The one bluetoothd listens on (EATT: ATT over credit-based channels).
    public static let eattPSM: UInt16 = 0x0027
    /// An SDU's MTU: at least 23 (a peer refuses less), at most 65,535.
    public static let mtus = 23...65_535

    /// A PSM as logs, reports and profiles write it: `0x0080`.
    public static func text(_ psm: UInt16) -> String { "0x" + Hex.word(psm).uppercased() }
}

extension LECreditBasedChannel {
    /// A result a device refuses an LE credit-based connection request with (Core spec, Vol 3, Part A, 4.23), of those
    /// a Linux listener can be made to give. The kernel answers the request itself from the listener's state, so
    /// only ``insufficientAuthorization`` is a verdict on one request (a deferred request closed unaccepted); the
    /// others hold for every request while the listener is so: no listener on the PSM, or a security level the link
    /// falls short of. "No resources" (0x0004) is left out: Linux gives it only when its accept queue overflows.
    public enum Refusal: String, CaseIterable, Sendable, Comparable {
        case psmNotSupported = "psm-not-supported"
        case insufficientAuthentication = "insufficient-authentication"
        case insufficientAuthorization = "insufficient-authorization"
        case insufficientEncryption = "insufficient-encryption"

        /// The result code in the connection response.
        public var result: UInt16 {
            switch self {
            case .psmNotSupported: 0x0002
            case .insufficientAuthentication: 0x0005
            case .insufficientAuthorization: 0x0006
            case .insufficientEncryption: 0x0008
            }
        }

        /// Whether gattemu answers each request itself (a deferred one refused), rather than the kernel answering
        /// every request from the listener's state.
        public var isPerRequest: Bool { self == .insufficientAuthorization }

        /// The results the kernel gives every request while a listener is held so (not ``isPerRequest``).
        public static var held: [Self] { allCases.filter { !$0.isPerRequest } }

        /// `0x0006 (insufficient-authorization)`.
        public var text: String { "0x" + Hex.word(result).uppercased() + " (\(rawValue))" }

        /// Of two held at once, the one the kernel checks first: no listener, then security (authentication
        /// before encryption, the higher level).
        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.precedence < rhs.precedence }

        private var precedence: Int {
            switch self {
            case .psmNotSupported: 3
            case .insufficientAuthentication: 2
            case .insufficientEncryption: 1
            case .insufficientAuthorization: 0
            }
        }
    }
}
