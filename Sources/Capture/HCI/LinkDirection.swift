/// Which way a PDU went on the link, by LE role.
public enum LinkDirection: Sendable, Hashable, CustomStringConvertible {
    case centralToPeripheral
    case peripheralToCentral
    /// Neither the role nor the HCI direction is known.
    case unknown

    public var description: String {
        switch self {
        case .centralToPeripheral: "central → peripheral"
        case .peripheralToCentral: "peripheral → central"
        case .unknown: "unknown direction"
        }
    }
}

/// The capturing host's role on a connection.
public enum ConnectionRole: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// HCI role 0: the local host initiated the connection.
    case central = 0
    /// HCI role 1: the peer connected to the local host.
    case peripheral = 1

    public var description: String { self == .central ? "central" : "peripheral" }

    /// Which way a PDU went, given who sent it across the HCI.
    public func direction(of sender: HCIDirection) -> LinkDirection {
        switch (self, sender) {
        case (.central, .hostToController), (.peripheral, .controllerToHost): .centralToPeripheral
        case (.central, .controllerToHost), (.peripheral, .hostToController): .peripheralToCentral
        case (_, .unknown): .unknown
        }
    }
}
