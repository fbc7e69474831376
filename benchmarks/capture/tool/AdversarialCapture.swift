import Bluetooth
import Capture
import CaptureTestSupport

/// Captures built to make an import do more than its input warrants (issue #27); `gattemu import` must stay
/// linear in them, in time and memory (benchmarks/README.md, "Adversarial captures").
enum AdversarialCapture {
    /// One connection (the device C0:00:00:00:00:00) whose central reads the GAP Device Name again and again,
    /// each Read By Type response (ATT MTU 517) carrying 46 names never seen before.
    static func names(path: String, size: Int) {
        let file = BTSnoopStream(path: path, datalink: 1002)
        let device = BluetoothAddress("C0:00:00:00:00:00")!
        func att(_ opcode: ATTOpcode, _ parameters: [UInt8], _ direction: HCIDirection) {
            for packet in SyntheticHCI.acl(
                handle: 0x40, SyntheticHCI.l2cap(channel: 4, SyntheticHCI.att(opcode, parameters)), fragment: 1021)
            {
                file.emit(.acl, packet, direction)
            }
        }
        file.emit(.command, SyntheticHCI.leCreateConnection(peer: device))
        file.emit(.event, SyntheticHCI.leConnectionComplete(handle: 0x40, peer: device))
        att(.exchangeMTURequest, [0x05, 0x02], .hostToController)
        att(.exchangeMTUResponse, [0x05, 0x02], .controllerToHost)
        var counter = 0
        while file.size < size {
            att(.readByTypeRequest, [1, 0, 0xFF, 0xFF, 0x00, 0x2A], .hostToController)
            var response: [UInt8] = [11]
            for _ in 0..<46 {
                let digits = String(counter)
                response += [3, 0] + Array(("N" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits).utf8)
                counter += 1
            }
            att(.readByTypeResponse, response, .controllerToHost)
        }
        file.emit(.event, SyntheticHCI.disconnectionComplete(handle: 0x40))
        file.close()
    }

    /// A btmon file (Linux monitor, datalink 2001): a connection to the device C0:00:00:00:00:00 with one write,
    /// then ACL start fragments, each on a (controller index, handle) pair of its own, each claiming a 65,535-byte
    /// L2CAP PDU and carrying 16 bytes of it; no continuation ever comes.
    static func fragments(path: String, size: Int) {
        let file = BTSnoopStream(path: path, datalink: 2001)
        let device = BluetoothAddress("C0:00:00:00:00:00")!
        file.emit(.command, SyntheticHCI.leCreateConnection(peer: device))
        file.emit(.event, SyntheticHCI.leConnectionComplete(handle: 0x40, peer: device))
        for (opcode, parameters, direction) in [
            (ATTOpcode.writeRequest, [9, 0, 1] as [UInt8], HCIDirection.hostToController), (.writeResponse, [], .controllerToHost),
        ] {
            file.emit(
                .acl, SyntheticHCI.acl(handle: 0x40, SyntheticHCI.l2cap(channel: 4, SyntheticHCI.att(opcode, parameters)))[0], direction)
        }
        var index = 0
        while file.size < size {
            // Handles 0x0100-0x0DFF: not the connection's, and not the vendor diagnostics' (0x0EDC, above 0x0EFF).
            let handle = UInt16(0x0100 + index % 0x0D00)
            let controller = UInt16(truncatingIfNeeded: index / 0x0D00)
            let fragment = [0xFF, 0xFF, 0x04, 0x00] + [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: 16)
            file.emit(
                .acl, [UInt8(handle & 0xFF), UInt8(handle >> 8) | 0x20, UInt8(fragment.count), 0] + fragment, .controllerToHost,
                controller: controller)
            index += 1
        }
        file.close()
    }
}
