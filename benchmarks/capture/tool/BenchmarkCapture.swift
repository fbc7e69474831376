import Bluetooth
import Capture
import CaptureTestSupport
import Foundation

/// The benchmark's input: a btsnoop (H4) of about the size asked, written as it is generated. Sessions of
/// four interleaved connections on reused handles: advertising, connection, MTU exchange, discovery,
/// write requests, write commands, long notifications split into 27-byte ACL fragments, indications,
/// disconnection.
enum BenchmarkCapture {
    static func write(path: String, size: Int) {
        let file = BTSnoopStream(path: path, datalink: 1002)
        var session = 0
        func emit(_ kind: CapturePacket.Kind, _ bytes: [UInt8], _ direction: HCIDirection = .unknown) { file.emit(kind, bytes, direction) }
        func att(_ handle: UInt16, _ opcode: ATTOpcode, _ parameters: [UInt8], _ direction: HCIDirection, fragment: Int = 251) {
            for packet in SyntheticHCI.acl(
                handle: handle, SyntheticHCI.l2cap(channel: 4, SyntheticHCI.att(opcode, parameters)), fragment: fragment)
            {
                emit(.acl, packet, direction)
            }
        }
        emit(.event, SyntheticHCI.readBDAddrComplete(BluetoothAddress("00:AA:01:01:00:01")!))
        while file.size < size {
            let handles: [UInt16] = (0..<4).map { 0x0040 + UInt16(($0 + session) % 6) }
            let peers = handles.indices.map {
                BluetoothAddress(bytes: [0xC0, 0, 0, UInt8(session >> 8 & 0xFF), UInt8(session & 0xFF), UInt8($0)])!
            }
            for (index, peer) in peers.enumerated() {
                let name = Array("Bench-\(session)-\(index)".utf8)
                emit(.event, SyntheticHCI.legacyAdvertisingReports([(0x00, 1, peer, [2, 1, 6, UInt8(name.count + 1), 9] + name, -50)]))
                emit(.event, SyntheticHCI.legacyAdvertisingReports([(0x04, 1, peer, [3, 3, 0x0F, 0x18], -51)]))
            }
            for (handle, peer) in zip(handles, peers) {
                emit(.command, SyntheticHCI.leCreateConnection(peer: peer, peerType: 1))
                emit(.event, SyntheticHCI.leConnectionComplete(handle: handle, peer: peer, peerType: 1, enhanced: true))
                att(handle, .exchangeMTURequest, [0x05, 0x02], .hostToController)
                att(handle, .exchangeMTUResponse, [0xF7, 0x00], .controllerToHost)
                att(handle, .readByGroupTypeRequest, [1, 0, 0xFF, 0xFF, 0x00, 0x28], .hostToController)
                att(handle, .readByGroupTypeResponse, [6, 1, 0, 5, 0, 0x00, 0x18, 6, 0, 12, 0, 0x0F, 0x18], .controllerToHost)
                att(handle, .readByTypeRequest, [1, 0, 0xFF, 0xFF, 0x03, 0x28], .hostToController)
                att(handle, .readByTypeResponse, [7, 2, 0, 0x02, 3, 0, 0x00, 0x2A, 7, 0, 0x1A, 8, 0, 0x19, 0x2A], .controllerToHost)
                att(handle, .readRequest, [3, 0], .hostToController)
                att(handle, .readResponse, Array("Bench".utf8), .controllerToHost)
            }
            // Traffic on all four at once: notifications in 27-byte fragments, interleaved across handles.
            for round in 0..<40 {
                for handle in handles {
                    att(handle, .writeRequest, [9, 0, 1, 0], .hostToController)
                    att(handle, .writeResponse, [], .controllerToHost)
                    att(handle, .writeCommand, [8, 0] + [UInt8](repeating: UInt8(round), count: 20), .hostToController)
                }
                for fragmentIndex in 0..<4 {
                    for handle in handles {
                        let l2cap = SyntheticHCI.l2cap(
                            channel: 4, SyntheticHCI.att(.handleValueNotification, [8, 0] + [UInt8](repeating: UInt8(round), count: 98)))
                        let fragments = SyntheticHCI.acl(handle: handle, l2cap, fragment: 27)
                        if fragmentIndex < fragments.count { emit(.acl, fragments[fragmentIndex], .controllerToHost) }
                    }
                }
                if round % 10 == 0 {
                    for handle in handles {
                        att(handle, .handleValueIndication, [8, 0, UInt8(round)], .controllerToHost)
                        att(handle, .handleValueConfirmation, [], .hostToController)
                    }
                }
            }
            for handle in handles { emit(.event, SyntheticHCI.disconnectionComplete(handle: handle)) }
            session += 1
        }
        file.close()
    }
}
