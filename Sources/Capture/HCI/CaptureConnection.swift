import Bluetooth

/// One connection, from its connection-complete event (or its first ACL data) to its disconnection.
///
/// Controllers reuse handles: a handle names this connection only between ``opened`` and ``closed``;
/// ``id`` is what PDUs refer to.
public struct CaptureConnection: Sendable, Hashable, Identifiable {
    /// Index in ``CaptureTrace/connections``; PDUs carry it.
    public var id: Int
    public var controller: UInt16
    public var handle: UInt16
    public var link: LinkType
    public var origin: Origin
    /// The peer's identity address as the controller reported it; nil when only ACL data was seen.
    public var peer: DeviceAddress?
    /// The resolvable private address the peer used, when the controller resolved it (enhanced event).
    public var peerResolvablePrivateAddress: BluetoothAddress?
    /// The capturing host's role; nil when unknown.
    public var localRole: ConnectionRole?
    /// Whether ``localRole`` is inferred (no LE connection event): from who sent the first discovery
    /// request, the client taken as central; ACL-only connections assume the capturing phone is central until then.
    public var roleInferred: Bool
    /// In units of 1.25 ms, as last set by the connection-complete or connection-update event.
    public var interval: UInt16?
    public var peripheralLatency: UInt16?
    /// In units of 10 ms.
    public var supervisionTimeout: UInt16?
    public var opened: CaptureMoment
    public var closed: CaptureMoment?
    public var disconnectReason: HCIStatus?
    public var encryption: [EncryptionChange]

    /// How the capture came to know the connection.
    public enum Origin: Sendable, Hashable, CustomStringConvertible {
        /// LE Connection Complete (subevent 0x01).
        case leConnectionComplete
        /// LE Enhanced Connection Complete (subevent 0x0A or 0x29).
        case leEnhancedConnectionComplete
        /// BR/EDR Connection Complete (event 0x03).
        case classicConnectionComplete
        /// ACL data on a handle no event had opened (ATT-only exports, captures that begin mid-connection);
        /// `fromCreateConnection`: the peer is the target of the last LE Create Connection command.
        case aclData(peerFromCreateConnection: Bool)

        public var description: String {
            switch self {
            case .leConnectionComplete: "LE Connection Complete"
            case .leEnhancedConnectionComplete: "LE Enhanced Connection Complete"
            case .classicConnectionComplete: "Connection Complete"
            case .aclData(let fromCommand): fromCommand ? "ACL data (peer from LE Create Connection)" : "ACL data only"
            }
        }
    }

    public var isOpen: Bool { closed == nil }
}

/// An encryption change on a connection (events 0x08, 0x59 v2 with key size, 0x30 key refresh).
public struct EncryptionChange: Sendable, Hashable {
    public var moment: CaptureMoment
    public var status: HCIStatus
    /// 0 off, 1 on (AES-CCM for LE), 2 on with E0/AES-CCM for BR/EDR; nil for a key refresh.
    public var enabled: UInt8?
    /// Version 2 of the event only.
    public var keySize: UInt8?
    public var isKeyRefresh: Bool { enabled == nil }
}

/// A connection attempt that failed (connection complete with a status other than success), often a
/// cancelled create-connection with an all-zero address.
public struct ConnectionAttempt: Sendable, Hashable {
    public var moment: CaptureMoment
    public var controller: UInt16
    public var status: HCIStatus
    public var peer: DeviceAddress?
    public var link: LinkType
}
