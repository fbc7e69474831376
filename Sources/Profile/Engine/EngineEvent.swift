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
    case read(characteristic: String, central: CentralID, offset: Int)
    case write(characteristic: String, central: CentralID, value: [UInt8], withResponse: Bool)
    case subscribe(characteristic: String, central: CentralID)
    case unsubscribe(characteristic: String, central: CentralID)
    /// A timer the engine scheduled with `.scheduleTimer` fired.
    case timer(String)
    /// A named trigger from the control API.
    case trigger(String, arguments: [String: String])

    /// The central the event concerns, if any.
    public var central: CentralID? {
        switch self {
        case .connect(let c), .disconnect(let c): c
        case .read(_, let c, _), .write(_, let c, _, _), .subscribe(_, let c), .unsubscribe(_, let c): c
        case .timer, .trigger: nil
        }
    }
}
