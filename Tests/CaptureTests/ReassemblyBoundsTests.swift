import Bluetooth
import CaptureTestSupport
import Testing

@testable import Capture

/// ACL reassembly holds what arrived, never what a header claims, and at most
/// ``ACLReassembler/streamLimit`` PDUs and ``ACLReassembler/byteLimit`` bytes at once.
@Suite struct ReassemblyBoundsTests {
    /// A start fragment whose L2CAP header claims a 65,535-byte PDU, carrying `carried` bytes of it.
    static func claimingStart(carried: Int) -> ArraySlice<UInt8> {
        ([0xFF, 0xFF, 0x04, 0x00] + [UInt8](repeating: 0x0B, count: carried))[...]
    }

    static func stream(_ index: Int) -> ACLReassembler.Stream {
        ACLReassembler.Stream(controller: UInt16(index / 0x0E00), handle: UInt16(index % 0x0E00), direction: .controllerToHost)
    }

    @Test func aClaimedLengthReservesNothing() {
        var reassembler = ACLReassembler()
        for index in 0..<ACLReassembler.streamLimit {
            let (complete, problems) = reassembler.add(
                Self.claimingStart(carried: 4), boundary: 0b10, stream: Self.stream(index), frame: index + 1)
            #expect(complete == nil && problems.isEmpty)
        }
        #expect(reassembler.pendingStreams == ACLReassembler.streamLimit)
        #expect(reassembler.pendingBytes == ACLReassembler.streamLimit * 8)
        // Room for what arrived (an array's growth), not for the 65,539 bytes each header claims.
        #expect(reassembler.pendingCapacity <= ACLReassembler.streamLimit * 64, "capacity \(reassembler.pendingCapacity)")
    }

    @Test func pendingPDUsAreCappedAndTheOldestDroppedFirst() {
        var reassembler = ACLReassembler()
        var dropped: [CaptureProblem.Reason] = []
        let count = ACLReassembler.streamLimit * 10
        for index in 0..<count {
            dropped += reassembler.add(Self.claimingStart(carried: 4), boundary: 0b10, stream: Self.stream(index), frame: index + 1).1
        }
        #expect(reassembler.pendingStreams == ACLReassembler.streamLimit)
        #expect(dropped.count == count - ACLReassembler.streamLimit)
        #expect(dropped.first == .reassemblyLimit(handle: Self.stream(0).handle, received: 8, expected: 65539))
        // The newest are the ones kept: their continuations still complete them.
        let last = Self.stream(count - 1)
        let (complete, problems) = reassembler.add(
            [UInt8](repeating: 0, count: 65539 - 8)[...], boundary: 0b01, stream: last, frame: count + 1)
        #expect(problems.isEmpty && complete?.bytes.count == 65539 && complete?.firstFrame == count)
    }

    @Test func pendingBytesAreCapped() {
        var reassembler = ACLReassembler()
        var dropped: [CaptureProblem.Reason] = []
        // Each start carries 61,680 of its 65,539 bytes: 17 of them fit the byte limit, with 16 bytes to spare.
        let size = 61_680
        let fit = ACLReassembler.byteLimit / size
        for index in 0...fit {
            dropped +=
                reassembler.add(Self.claimingStart(carried: size - 4), boundary: 0b10, stream: Self.stream(index), frame: index + 1).1
        }
        #expect(reassembler.pendingBytes == fit * size)
        #expect(reassembler.pendingStreams == fit)
        #expect(dropped == [.reassemblyLimit(handle: Self.stream(0).handle, received: size, expected: 65539)])
        // Continuations count too: growing the newest pending PDU past the limit drops the oldest other.
        dropped = reassembler.add([UInt8](repeating: 0, count: 100)[...], boundary: 0b01, stream: Self.stream(fit), frame: fit + 2).1
        #expect(dropped == [.reassemblyLimit(handle: Self.stream(1).handle, received: size, expected: 65539)])
        #expect(reassembler.pendingBytes == (fit - 1) * size + 100 && reassembler.pendingBytes <= ACLReassembler.byteLimit)
    }

    /// Through the decoder: every start fragment on its own (controller, handle) pair, none completed. The
    /// trace says once that the limit was hit; each dropped PDU is a problem.
    @Test func aCaptureOfClaimedButMissingFragmentsIsReportedOnce() throws {
        var script = CaptureScript()
        let count = ACLReassembler.streamLimit * 3
        for index in 0..<count {
            script.controller = UInt16(index / 0x0E00)
            let handle = UInt16(index % 0x0E00)
            script.add(
                .acl, [UInt8(handle & 0xFF), UInt8(handle >> 8) | 0x20, 8, 0, 0xFF, 0xFF, 0x04, 0x00, 1, 2, 3, 4],
                direction: .controllerToHost)
        }
        let trace = try CaptureTrace.read(bytes: script.btsnoop(datalink: 2001))
        #expect(
            trace.notes.filter { $0 == .reassemblyLimited(streams: ACLReassembler.streamLimit, bytes: ACLReassembler.byteLimit) }.count == 1
        )
        #expect(trace.problems.count { if case .reassemblyLimit = $0.reason { true } else { false } } == count - ACLReassembler.streamLimit)
        #expect(trace.problems.count { if case .incompleteAtEnd = $0.reason { true } else { false } } == ACLReassembler.streamLimit)
    }
}
