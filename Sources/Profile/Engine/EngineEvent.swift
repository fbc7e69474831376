import Bluetooth

/// A connected central, identified by its address.
public struct CentralID: Hashable, Sendable, CustomStringConvertible {
    public var address: BluetoothAddress

    public init(address: BluetoothAddress) {
        self.address = address
    }

    public var description: String { address.description }
}

/// Something that happened, reported by the runtime to the engine.
public enum EngineEvent: Sendable, Equatable {
    case connect(CentralID)
    case disconnect(CentralID)
    /// `characteristic` is the characteristic id from the profile.
    case read(characteristic: CharacteristicID, central: CentralID, offset: Int)
    case write(characteristic: CharacteristicID, central: CentralID, value: [UInt8], withResponse: Bool)
    case subscribe(characteristic: CharacteristicID, central: CentralID)
    case unsubscribe(characteristic: CharacteristicID, central: CentralID)
    /// A timer the engine scheduled with `.scheduleTimer` fired.
    case timer(String)
    /// A named trigger from the control API.
    case trigger(String, arguments: [String: String])
    /// A central opened a channel of the profile's `channels` (`channel` is its id).
    case channelOpen(channel: String, link: ChannelLink)
    /// An SDU arrived on an open channel.
    case sdu(channel: String, link: ChannelLink, value: [UInt8])
    /// An open channel closed.
    case channelClose(channel: String, link: ChannelLink)

    /// The central the event concerns, if any.
    public var central: CentralID? {
        switch self {
        case .connect(let c), .disconnect(let c): c
        case .read(_, let c, _), .write(_, let c, _, _), .subscribe(_, let c), .unsubscribe(_, let c): c
        case .channelOpen(_, let link), .sdu(_, let link, _), .channelClose(_, let link): link.central
        case .timer, .trigger: nil
        }
    }
}

/// One open L2CAP channel: the runtime's number for it (unique while the device runs) and the central at its far end.
public struct ChannelLink: Hashable, Sendable, CustomStringConvertible {
    public var id: UInt64
    public var central: CentralID

    public init(id: UInt64, central: CentralID) {
        self.id = id
        self.central = central
    }

    public var description: String { "#\(id)" }
}
