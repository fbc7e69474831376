import Bluetooth

/// One ATT PDU on a connection, reassembled from its ACL fragments; ``message`` decodes its parameters.
public struct ATTPDU: Sendable, Hashable {
    /// The frame that completed it (its last fragment), as Wireshark shows the PDU.
    public var frame: Int
    /// The frame of its first fragment (the same as ``frame`` when it was not fragmented).
    public var firstFrame: Int
    public var timestamp: Int64?
    /// ``CaptureConnection/id``.
    public var connection: Int
    /// Who sent it across the HCI: the capturing host (``HCIDirection/hostToController``) or the peer.
    public var sender: HCIDirection
    public var direction: LinkDirection
    /// The L2CAP channel: 0x0004 on LE, a dynamic channel for ATT over BR/EDR.
    public var channel: UInt16
    public var opcode: ATTOpcode
    /// Everything after the opcode (for a signed write, the signature included).
    public var parameters: [UInt8]

    public init(
        frame: Int, firstFrame: Int, timestamp: Int64?, connection: Int, sender: HCIDirection, direction: LinkDirection,
        channel: UInt16, opcode: ATTOpcode, parameters: [UInt8]
    ) {
        self.frame = frame
        self.firstFrame = firstFrame
        self.timestamp = timestamp
        self.connection = connection
        self.sender = sender
        self.direction = direction
        self.channel = channel
        self.opcode = opcode
        self.parameters = parameters
    }

    /// The parameters decoded by opcode (decoded on each call; keep the result if used often).
    public var message: ATTMessage { ATTMessage(opcode: opcode, parameters: parameters[...]) }
}
