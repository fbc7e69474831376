import Bluetooth
import Capture
import CaptureExport

/// HCI packets as a controller and host exchange them: the product's builders (CaptureExport), under the name the
/// tests use.
public typealias SyntheticHCI = HCIPacket

/// A capture written step by step, timestamps advancing 1 ms a packet.
public struct CaptureScript: Sendable {
    public var packets: [CapturePacket] = []
    public var time: Int64
    public var controller: UInt16

    public init(start: Int64 = 1_700_000_000_000_000, controller: UInt16 = 0) {
        time = start
        self.controller = controller
    }

    public mutating func add(_ kind: CapturePacket.Kind, _ bytes: [UInt8], direction: HCIDirection = .unknown, keep: Int? = nil) {
        packets.append(CapturePacket(kind: kind, direction: direction, controller: controller, timestamp: time, bytes: bytes, keep: keep))
        time += 1000
    }

    public mutating func command(_ bytes: [UInt8]) { add(.command, bytes) }
    public mutating func event(_ bytes: [UInt8]) { add(.event, bytes) }

    /// An L2CAP PDU on `handle`, fragmented as asked.
    public mutating func l2cap(handle: UInt16, channel: UInt16, _ payload: [UInt8], from direction: HCIDirection, fragment: Int = 251) {
        for packet in SyntheticHCI.acl(handle: handle, SyntheticHCI.l2cap(channel: channel, payload), fragment: fragment) {
            add(.acl, packet, direction: direction)
        }
    }

    /// An ATT PDU on `handle` (CID 4).
    public mutating func att(
        handle: UInt16, _ opcode: ATTOpcode, _ parameters: [UInt8] = [], from direction: HCIDirection, fragment: Int = 251
    ) {
        l2cap(handle: handle, channel: 4, SyntheticHCI.att(opcode, parameters), from: direction, fragment: fragment)
    }

    public func btsnoop(datalink: UInt32 = 1002) -> [UInt8] { CaptureWriter.btsnoop(packets, datalink: datalink) }
    public func packetLogger(bigEndian: Bool = false) -> [UInt8] { CaptureWriter.packetLogger(packets, bigEndian: bigEndian) }
}
