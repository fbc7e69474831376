import Bluetooth
import Capture
import CaptureTestSupport
import Testing

@Suite struct ReassemblyTests {
    func connected() -> CaptureScript {
        var script = CaptureScript()
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x40, peer: peerA))
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x41, peer: peerB))
        return script
    }

    @Test func fragmentsJoinIntoOnePDUReportedAtTheLastFragment() throws {
        var script = connected()
        let value = Array(0..<100).map(UInt8.init)
        script.att(handle: 0x40, .handleValueNotification, [0x03, 0x00] + value, from: .controllerToHost, fragment: 27)
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.problems.isEmpty)
        let pdu = try #require(trace.attPDUs.first)
        #expect(trace.attPDUs.count == 1)
        #expect(pdu.firstFrame == 3 && pdu.frame == 6)  // 107 bytes of L2CAP in 27-byte fragments
        #expect(pdu.message == .handleValueNotification(handle: 3, value: value))
        #expect(pdu.direction == .peripheralToCentral && pdu.sender == .controllerToHost)
    }

    @Test func interleavedHandlesAndDirectionsReassembleSeparately() throws {
        var script = connected()
        let l2 = { (byte: UInt8) in
            SyntheticHCI.l2cap(channel: 4, SyntheticHCI.att(.writeCommand, [5, 0] + [UInt8](repeating: byte, count: 40)))
        }
        let a = SyntheticHCI.acl(handle: 0x40, l2(0xA1), fragment: 20)
        let b = SyntheticHCI.acl(handle: 0x41, l2(0xB1), fragment: 20)
        let c = SyntheticHCI.acl(
            handle: 0x40,
            SyntheticHCI.l2cap(channel: 4, SyntheticHCI.att(.handleValueNotification, [7, 0] + [UInt8](repeating: 0xC1, count: 40))),
            fragment: 20)
        for index in 0..<3 {
            script.add(.acl, a[index], direction: .hostToController)
            script.add(.acl, c[index], direction: .controllerToHost)
            script.add(.acl, b[index], direction: .hostToController)
        }
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.problems.isEmpty)
        #expect(trace.attPDUs.map(\.opcode) == [.writeCommand, .handleValueNotification, .writeCommand])
        #expect(trace.attPDUs.map(\.connection) == [0, 0, 1])
        #expect(trace.attPDUs.map { $0.parameters.last } == [0xA1, 0xC1, 0xB1])
        #expect(trace.attPDUs.map(\.firstFrame) == [3, 4, 5])
    }

    @Test func aStartWhileIncompleteDropsThePendingPDUAndRestarts() throws {
        var script = connected()
        let long = SyntheticHCI.acl(
            handle: 0x40, SyntheticHCI.l2cap(channel: 4, SyntheticHCI.att(.readResponse, [UInt8](repeating: 1, count: 60))), fragment: 30)
        script.att(handle: 0x40, .readRequest, [3, 0], from: .hostToController)
        script.add(.acl, long[0], direction: .controllerToHost)
        script.att(handle: 0x40, .readResponse, [9, 9], from: .controllerToHost)
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.problems == [CaptureProblem(.startWhileIncomplete(handle: 0x40, received: 30, expected: 65), frame: 5)])
        #expect(trace.opcodes == [.readRequest, .readResponse])
        #expect(trace.attPDUs[1].parameters == [9, 9])
        #expect(trace.attTransactions.first?.outcome == .answered)
    }

    @Test func aContinuationWithoutAStartIsDropped() throws {
        var script = connected()
        let long = SyntheticHCI.acl(
            handle: 0x40,
            SyntheticHCI.l2cap(channel: 4, SyntheticHCI.att(.handleValueNotification, [3, 0] + [UInt8](repeating: 1, count: 60))),
            fragment: 30)
        script.add(.acl, long[1], direction: .controllerToHost)
        script.add(.acl, long[2], direction: .controllerToHost)
        script.att(handle: 0x40, .handleValueNotification, [3, 0, 7], from: .controllerToHost)
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.problems.map(\.reason) == [.continuationWithoutStart(handle: 0x40), .continuationWithoutStart(handle: 0x40)])
        #expect(trace.opcodes == [.handleValueNotification])
    }

    @Test func aPDUCutOffByTheEndOrADisconnectionIsReported() throws {
        var script = connected()
        let long = SyntheticHCI.acl(
            handle: 0x40,
            SyntheticHCI.l2cap(channel: 4, SyntheticHCI.att(.handleValueNotification, [3, 0] + [UInt8](repeating: 1, count: 60))),
            fragment: 30)
        script.add(.acl, long[0], direction: .controllerToHost)
        script.event(SyntheticHCI.disconnectionComplete(handle: 0x40))
        let long41 = SyntheticHCI.acl(
            handle: 0x41,
            SyntheticHCI.l2cap(channel: 4, SyntheticHCI.att(.handleValueNotification, [3, 0] + [UInt8](repeating: 1, count: 60))),
            fragment: 30)
        script.add(.acl, long41[0], direction: .controllerToHost)
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(
            trace.problems == [
                CaptureProblem(.incompleteAtEnd(handle: 0x40, received: 30, expected: 67), frame: 4),
                CaptureProblem(.incompleteAtEnd(handle: 0x41, received: 30, expected: 67), frame: 5),
            ])
    }

    @Test func startFragmentsShorterThanTheL2CAPHeader() throws {
        var script = connected()
        let l2cap = SyntheticHCI.l2cap(channel: 4, SyntheticHCI.att(.writeRequest, [3, 0, 1, 2, 3]))
        for packet in SyntheticHCI.acl(handle: 0x40, l2cap, fragment: 3) { script.add(.acl, packet, direction: .hostToController) }
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.problems.isEmpty)
        #expect(trace.attPDUs.first?.message == .writeRequest(handle: 3, value: [1, 2, 3]))
    }

    @Test func vendorDiagnosticHandlesAreIgnored() throws {
        var script = connected()
        script.add(.acl, [0xDC, 0x2E, 0x05, 0x00, 0x01, 0x00, 0x04, 0x00, 0x15], direction: .controllerToHost)  // Qualcomm 0x0EDC
        script.add(.acl, [0xF1, 0x2F, 0x05, 0x00, 0x20, 0x00, 0x04, 0x00, 0x15], direction: .controllerToHost)  // 0x0FF1
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.attPDUs.isEmpty && trace.problems.isEmpty)
        #expect(trace.notes.contains(.vendorHandle(controller: 0, handle: 0x0EDC, frame: 3)))
        #expect(trace.notes.contains(.vendorHandle(controller: 0, handle: 0x0FF1, frame: 4)))
    }
}
