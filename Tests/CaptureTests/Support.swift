import Bluetooth
import Capture
import CaptureTestSupport

let peerA = BluetoothAddress("C0:11:22:33:44:55")!
let peerB = BluetoothAddress("D0:66:77:88:99:AA")!
let localAddress = BluetoothAddress("00:AA:01:01:00:01")!

/// Every record of a capture, with the reader's problems.
func readAll(_ bytes: [UInt8]) throws -> (records: [HCIRecord], reader: CaptureReader) {
    let reader = try CaptureReader(bytes: bytes)
    var records: [HCIRecord] = []
    while let record = reader.next() { records.append(record) }
    return (records, reader)
}

/// A few packets of every kind and direction, for format round trips.
func samplePackets() -> [CapturePacket] {
    var script = CaptureScript()
    script.command(SyntheticHCI.command(0x1009))
    script.event(SyntheticHCI.readBDAddrComplete(localAddress))
    script.add(.acl, SyntheticHCI.acl(handle: 0x40, SyntheticHCI.l2cap(channel: 4, [0x0A, 0x03, 0x00]))[0], direction: .hostToController)
    script.add(.acl, SyntheticHCI.acl(handle: 0x40, SyntheticHCI.l2cap(channel: 4, [0x0B, 0x41]))[0], direction: .controllerToHost)
    script.add(.sco, [0x41, 0x00, 0x02, 0xAA, 0xBB], direction: .controllerToHost)
    script.add(.iso, [0x60, 0x00, 0x01, 0x00, 0xCC], direction: .hostToController)
    return script.packets
}

extension CaptureTrace {
    var opcodes: [ATTOpcode] { attPDUs.map(\.opcode) }
}
