import Bluetooth
import Capture
import CaptureTestSupport
import Testing

@Suite struct ATTPairingTests {
    func connected() -> CaptureScript {
        var script = CaptureScript()
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x40, peer: peerA))
        return script
    }

    @Test func requestsPairWithResponsesAndErrorResponses() throws {
        var script = connected()
        script.att(handle: 0x40, .readRequest, [3, 0], from: .hostToController)
        script.att(handle: 0x40, .readResponse, [1, 2], from: .controllerToHost)
        script.att(handle: 0x40, .writeRequest, [5, 0, 1], from: .hostToController)
        script.att(handle: 0x40, .errorResponse, [0x12, 5, 0, 0x05], from: .controllerToHost)
        // The peer's own client asks the local server meanwhile: its request is outstanding in the other direction.
        script.att(handle: 0x40, .readByGroupTypeRequest, [1, 0, 0xFF, 0xFF, 0x00, 0x28], from: .controllerToHost)
        script.att(handle: 0x40, .findInformationRequest, [1, 0, 5, 0], from: .hostToController)
        script.att(handle: 0x40, .errorResponse, [0x10, 1, 0, 0x0A], from: .hostToController)
        script.att(handle: 0x40, .findInformationResponse, [1, 1, 0, 0x00, 0x28], from: .controllerToHost)
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.problems.isEmpty)
        let outcomes = trace.attTransactions.map { ($0.request.opcode, $0.response?.opcode, $0.outcome) }
        #expect(outcomes.map(\.0) == [.readRequest, .writeRequest, .readByGroupTypeRequest, .findInformationRequest])
        #expect(outcomes.map(\.1) == [.readResponse, .errorResponse, .errorResponse, .findInformationResponse])
        #expect(outcomes.map(\.2) == [.answered, .error(.insufficientAuthentication), .error(.attributeNotFound), .answered])
        #expect(trace.attTransactions[2].request.direction == .peripheralToCentral)
    }

    @Test func discoveryTransactionsKnowWhatTheyAskedFor() throws {
        var script = connected()
        script.att(handle: 0x40, .readByTypeRequest, [1, 0, 0xFF, 0xFF, 0x03, 0x28], from: .hostToController)
        script.att(handle: 0x40, .readByTypeResponse, [7, 2, 0, 0x02, 3, 0, 0x00, 0x2A], from: .controllerToHost)
        script.att(handle: 0x40, .readByTypeRequest, [1, 0, 0xFF, 0xFF, 0x02, 0x28], from: .hostToController)
        script.att(handle: 0x40, .readByTypeResponse, [8, 4, 0, 20, 0, 30, 0, 0x0F, 0x18], from: .controllerToHost)
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.attTransactions.map(\.requestedType) == [.characteristic, .include])
        #expect(
            trace.attTransactions[0].characteristicDeclarations == [
                .init(handle: 2, properties: [.read], valueHandle: 3, uuid: .deviceName)
            ])
        #expect(trace.attTransactions[0].includeDeclarations.isEmpty)
        #expect(trace.attTransactions[1].includeDeclarations.map(\.serviceRange) == [.init(start: 20, end: 30)])
    }

    @Test func indicationsPairWithConfirmations() throws {
        var script = connected()
        script.att(handle: 0x40, .handleValueIndication, [3, 0, 1], from: .controllerToHost)
        script.att(handle: 0x40, .writeRequest, [5, 0, 1], from: .hostToController)
        script.att(handle: 0x40, .handleValueConfirmation, [], from: .hostToController)
        script.att(handle: 0x40, .writeResponse, [], from: .controllerToHost)
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.attTransactions.map(\.request.opcode) == [.handleValueIndication, .writeRequest])
        #expect(trace.attTransactions.map { $0.response?.opcode } == [.handleValueConfirmation, .writeResponse])
        #expect(trace.attTransactions.allSatisfy { $0.outcome == .answered })
    }

    @Test func unansweredRequestsEndBySupersedingDisconnectionOrTheEnd() throws {
        var script = connected()
        script.att(handle: 0x40, .readRequest, [3, 0], from: .hostToController)
        script.att(handle: 0x40, .readRequest, [4, 0], from: .hostToController)
        script.event(SyntheticHCI.disconnectionComplete(handle: 0x40))
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x40, peer: peerA))
        script.att(handle: 0x40, .writeRequest, [5, 0, 1], from: .hostToController)
        script.att(handle: 0x40, .readResponse, [1], from: .controllerToHost)  // answers nothing outstanding
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(trace.attTransactions.map(\.outcome) == [.unanswered(.superseded), .unanswered(.disconnected), .unanswered(.captureEnded)])
        #expect(trace.attTransactions.map(\.request.frame) == [2, 3, 6])
        #expect(
            trace.problems.map(\.reason) == [.unmatchedResponse(opcode: 0x0B, "does not answer the outstanding Write Request (frame 6)")])
    }

    @Test func withoutHCIDirectionsOpcodesTellTheWay() throws {
        var script = connected()
        script.att(handle: 0x40, .readRequest, [3, 0], from: .hostToController)
        script.att(handle: 0x40, .readResponse, [1], from: .controllerToHost)
        script.att(handle: 0x40, .handleValueNotification, [3, 0, 1], from: .controllerToHost)
        let trace = try CaptureTrace.read(bytes: CaptureWriter.pcap(script.packets, linktype: 187))
        #expect(trace.attPDUs.map(\.sender) == [.unknown, .unknown, .unknown])
        #expect(trace.attPDUs.map(\.direction) == [.centralToPeripheral, .peripheralToCentral, .peripheralToCentral])
        #expect(trace.attTransactions.first?.outcome == .answered)
        #expect(trace.notes.contains(.noACLDirection))
    }
}

@Suite struct ATTMessageTests {
    func decode(_ opcode: ATTOpcode, _ parameters: [UInt8]) -> ATTMessage { ATTMessage(opcode: opcode, parameters: parameters[...]) }

    @Test func discoveryResponses() {
        #expect(decode(.exchangeMTURequest, [0x05, 0x02]) == .exchangeMTURequest(clientMTU: 517))
        #expect(decode(.exchangeMTUResponse, [0xF7, 0x00]) == .exchangeMTUResponse(serverMTU: 247))
        let noke = BluetoothUUID("1bc50001-0200-d29e-e511-446c609db825")!
        guard case .readByGroupTypeResponse(let groups) = decode(.readByGroupTypeResponse, [6, 1, 0, 5, 0, 0x00, 0x18]) else {
            Issue.record()
            return
        }
        #expect(groups.map(\.uuid) == [BluetoothUUID(0x1800)] && groups[0].endGroupHandle == 5)
        guard case .readByGroupTypeResponse(let long) = decode(.readByGroupTypeResponse, [20, 10, 0, 0xFF, 0xFF] + noke.littleEndian())
        else {
            Issue.record()
            return
        }
        #expect(long.first?.uuid == noke)
        guard
            case .readByTypeResponse(let entries) = decode(
                .readByTypeResponse, [7, 2, 0, 0x1A, 3, 0, 0x00, 0x2A, 7, 0, 0x02, 8, 0, 0x01, 0x2A])
        else {
            Issue.record()
            return
        }
        #expect(
            entries.compactMap(\.characteristicDeclaration) == [
                .init(handle: 2, properties: [.read, .write, .notify], valueHandle: 3, uuid: .deviceName),
                .init(handle: 7, properties: [.read], valueHandle: 8, uuid: .appearance),
            ])
        guard case .readByTypeResponse(let wide) = decode(.readByTypeResponse, [21, 9, 0, 0x10, 10, 0] + noke.littleEndian()) else {
            Issue.record()
            return
        }
        #expect(wide.first?.characteristicDeclaration?.uuid == noke)
        guard case .readByTypeResponse(let includes) = decode(.readByTypeResponse, [8, 4, 0, 20, 0, 30, 0, 0x0F, 0x18]) else {
            Issue.record()
            return
        }
        #expect(
            includes.first?.includeDeclaration == .init(handle: 4, serviceRange: .init(start: 20, end: 30), uuid: BluetoothUUID(0x180F)))
        #expect(
            decode(.findInformationResponse, [1, 4, 0, 0x02, 0x29, 5, 0, 0x01, 0x29])
                == .findInformationResponse([
                    .init(handle: 4, uuid: .clientCharacteristicConfiguration), .init(handle: 5, uuid: .userDescription),
                ]))
        #expect(
            decode(.findInformationResponse, [2, 4, 0] + noke.littleEndian(compact: false))
                == .findInformationResponse([.init(handle: 4, uuid: noke)]))
        #expect(
            decode(.findByTypeValueRequest, [1, 0, 0xFF, 0xFF, 0x00, 0x28, 0x0F, 0x18])
                == .findByTypeValueRequest(.init(start: 1, end: 0xFFFF), type: .primaryService, value: [0x0F, 0x18]))
        #expect(
            decode(.findByTypeValueResponse, [1, 0, 5, 0, 6, 0, 9, 0])
                == .findByTypeValueResponse([.init(start: 1, end: 5), .init(start: 6, end: 9)]))
        #expect(
            decode(.readByTypeRequest, [1, 0, 0xFF, 0xFF, 0x03, 0x28])
                == .readByTypeRequest(.init(start: 1, end: 0xFFFF), type: .characteristic))
    }

    @Test func valuesWritesAndNotifications() {
        #expect(decode(.readRequest, [3, 0]) == .readRequest(handle: 3))
        #expect(decode(.readBlobRequest, [3, 0, 22, 0]) == .readBlobRequest(handle: 3, offset: 22))
        #expect(decode(.readBlobResponse, [1, 2]) == .readBlobResponse(value: [1, 2]))
        #expect(decode(.readMultipleRequest, [3, 0, 5, 0]) == .readMultipleRequest(handles: [3, 5]))
        #expect(decode(.readMultipleResponse, [1, 2, 3]) == .readMultipleResponse(values: [1, 2, 3]))
        #expect(decode(.readMultipleVariableResponse, [2, 0, 1, 2, 1, 0, 3]) == .readMultipleVariableResponse(values: [[1, 2], [3]]))
        #expect(decode(.writeRequest, [3, 0, 9]) == .writeRequest(handle: 3, value: [9]))
        #expect(decode(.writeResponse, []) == .writeResponse)
        #expect(decode(.writeCommand, [3, 0]) == .writeCommand(handle: 3, value: []))
        #expect(decode(.signedWriteCommand, [3, 0, 7] + [UInt8](repeating: 0xEE, count: 12)) == .signedWriteCommand(handle: 3, value: [7]))
        #expect(decode(.prepareWriteRequest, [3, 0, 18, 0, 1, 2]) == .prepareWriteRequest(handle: 3, offset: 18, value: [1, 2]))
        #expect(decode(.prepareWriteResponse, [3, 0, 18, 0, 1, 2]) == .prepareWriteResponse(handle: 3, offset: 18, value: [1, 2]))
        #expect(decode(.executeWriteRequest, [1]) == .executeWriteRequest(flags: 1))
        #expect(decode(.handleValueNotification, [3, 0, 1]) == .handleValueNotification(handle: 3, value: [1]))
        #expect(decode(.handleValueIndication, [3, 0]) == .handleValueIndication(handle: 3, value: []))
        #expect(decode(.handleValueConfirmation, []) == .handleValueConfirmation)
        #expect(decode(.errorResponse, [0x0A, 3, 0, 0x02]) == .errorResponse(request: .readRequest, handle: 3, error: .readNotPermitted))
        #expect(decode(ATTOpcode(rawValue: 0x7E), [1]) == .unknown)
    }

    @Test func multipleHandleValueNotification() throws {
        var script = CaptureScript()
        script.event(SyntheticHCI.leConnectionComplete(handle: 0x40, peer: peerA))
        script.att(
            handle: 0x40, .multipleHandleValueNotification, [3, 0, 2, 0, 0xAA, 0xBB, 9, 0, 0, 0, 12, 0, 1, 0, 0xCC], from: .controllerToHost
        )
        let trace = try CaptureTrace.read(bytes: script.btsnoop())
        #expect(
            trace.attPDUs.first?.message
                == .multipleHandleValueNotification([
                    .init(handle: 3, value: [0xAA, 0xBB]), .init(handle: 9, value: []), .init(handle: 12, value: [0xCC]),
                ]))
        #expect(trace.attTransactions.isEmpty)
        #expect(
            decode(.multipleHandleValueNotification, [3, 0, 5, 0, 1])
                == .malformed("5 parameter bytes do not fit Multiple Handle Value Notification"))
    }

    @Test func malformedParameters() {
        for (opcode, parameters) in [
            (ATTOpcode.readRequest, [UInt8]([3])), (.exchangeMTURequest, [1, 2, 3]), (.readByTypeResponse, [7, 1, 2]),
            (.readByTypeResponse, [1, 0]), (.findInformationResponse, [3, 1, 0, 2, 0]), (.findInformationResponse, [1, 1, 0, 2]),
            (.errorResponse, [1]), (.signedWriteCommand, [3, 0, 1]), (.readByGroupTypeResponse, [3, 1, 0, 2]),
            (.readByTypeRequest, [1, 0, 2, 0, 3]), (.writeResponse, [1]), (.readMultipleRequest, [1, 0]),
        ] {
            guard case .malformed = decode(opcode, parameters) else {
                Issue.record("\(opcode) \(parameters) decoded")
                continue
            }
        }
    }
}
