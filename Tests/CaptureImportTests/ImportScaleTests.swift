import Bluetooth
import Capture
import CaptureImport
import CaptureTestSupport
import Replica
import Testing

/// `gattemu import` of a capture whose discovery names thousands of services.
@Suite struct ImportScaleTests {
    static func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

    static func script(_ n: Int) -> CaptureScript {
        let device = BluetoothAddress("C0:11:22:33:44:55")!
        let phone = HCIDirection.hostToController
        let answer = HCIDirection.controllerToHost
        var s = CaptureScript()
        s.command(SyntheticHCI.leCreateConnection(peer: device, peerType: 1))
        s.event(SyntheticHCI.leConnectionComplete(handle: 0x40, role: 0, peer: device, peerType: 1))
        // Service i: 1+4i..4+4i; include at +1 (of service i+1), declaration at +2, value at +3.
        let chunk = 500
        for first in stride(from: 0, to: n, by: chunk) {
            let range = first..<min(first + chunk, n)
            s.att(handle: 0x40, .readByGroupTypeRequest, le16(1 + 4 * first) + [0xFF, 0xFF, 0x00, 0x28], from: phone)
            var groups: [UInt8] = [6]
            for i in range {
                groups += le16(1 + 4 * i)
                groups += le16(4 + 4 * i)
                groups += [0x00, 0xA0]
            }
            s.att(handle: 0x40, .readByGroupTypeResponse, groups, from: answer)
        }
        for first in stride(from: 0, to: n, by: chunk) {
            let range = first..<min(first + chunk, n)
            s.att(handle: 0x40, .readByTypeRequest, le16(1 + 4 * first) + [0xFF, 0xFF, 0x02, 0x28], from: phone)
            var includes: [UInt8] = [8]
            for i in range {
                let next = (i + 1) % n
                includes += le16(2 + 4 * i)
                includes += le16(1 + 4 * next)
                includes += le16(4 + 4 * next)
                includes += [0x00, 0xA0]
            }
            s.att(handle: 0x40, .readByTypeResponse, includes, from: answer)
            s.att(handle: 0x40, .readByTypeRequest, le16(1 + 4 * first) + [0xFF, 0xFF, 0x03, 0x28], from: phone)
            var declarations: [UInt8] = [7]
            for i in range {
                declarations += le16(3 + 4 * i)
                declarations += [0x02]
                declarations += le16(4 + 4 * i)
                declarations += [0x01, 0xB0]
            }
            s.att(handle: 0x40, .readByTypeResponse, declarations, from: answer)
        }
        s.event(SyntheticHCI.disconnectionComplete(handle: 0x40))
        return s
    }

    /// A capture discovering 16,000 services, each with an include and a characteristic: each service's includes
    /// were filtered from all of them, and each characteristic's service searched for among all: 16,000 took 49 s
    /// in a debug build (4,000 took 3.3 s). Now a binary search and one sweep: well under a second.
    @Test(.timeLimit(.minutes(3))) func thousandsOfDiscoveredServicesImportPromptly() throws {
        let count = 16_000
        let trace = try CaptureTrace.read(bytes: Self.script(count).btsnoop())
        let replica = CaptureImport.replica(of: try CaptureImport.select(nil, in: trace), in: trace, source: "many services")
        #expect(replica.services.count == count)
        #expect(replica.services.allSatisfy { $0.characteristics.count == 1 && $0.includes.count == 1 })
        #expect(replica.services.last?.includes == [1])
    }
}
