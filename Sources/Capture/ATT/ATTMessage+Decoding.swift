import Bluetooth

extension ATTMessage {
    /// Decodes `parameters` (what follows the opcode) by `opcode`.
    public init(opcode: ATTOpcode, parameters: ArraySlice<UInt8>) {
        var cursor = ByteCursor(parameters)
        self = Self.decode(opcode, &cursor) ?? .malformed("\(parameters.count) parameter bytes do not fit \(opcode)")
    }

    private static func decode(_ opcode: ATTOpcode, _ cursor: inout ByteCursor) -> ATTMessage? {
        switch opcode {
        case .errorResponse:
            guard let request = cursor.u8(), let handle = cursor.attributeHandle(), let error = cursor.u8(), cursor.isAtEnd else {
                return nil
            }
            return .errorResponse(request: ATTOpcode(rawValue: request), handle: handle, error: ATTErrorCode(rawValue: error))
        case .exchangeMTURequest:
            guard let mtu = cursor.u16le(), cursor.isAtEnd else { return nil }
            return .exchangeMTURequest(clientMTU: mtu)
        case .exchangeMTUResponse:
            guard let mtu = cursor.u16le(), cursor.isAtEnd else { return nil }
            return .exchangeMTUResponse(serverMTU: mtu)
        case .findInformationRequest:
            guard let range = range(&cursor), cursor.isAtEnd else { return nil }
            return .findInformationRequest(range)
        case .findInformationResponse:
            guard let format = cursor.u8(), format == 1 || format == 2 else { return nil }
            let size = format == 1 ? 2 : 16
            guard !cursor.isAtEnd, cursor.remaining % (2 + size) == 0 else { return nil }
            var entries: [HandleUUID] = []
            while !cursor.isAtEnd {
                guard let handle = cursor.attributeHandle(), let wire = cursor.take(size), let uuid = BluetoothUUID(littleEndian: wire)
                else {
                    return nil
                }
                entries.append(HandleUUID(handle: handle, uuid: uuid))
            }
            return .findInformationResponse(entries)
        case .findByTypeValueRequest:
            guard let range = range(&cursor), let type = cursor.take(2), let uuid = BluetoothUUID(littleEndian: type) else { return nil }
            return .findByTypeValueRequest(range, type: uuid, value: Array(cursor.rest()))
        case .findByTypeValueResponse:
            guard !cursor.isAtEnd, cursor.remaining % 4 == 0 else { return nil }
            var ranges: [HandleRange] = []
            while let range = range(&cursor) { ranges.append(range) }
            return .findByTypeValueResponse(ranges)
        case .readByTypeRequest, .readByGroupTypeRequest:
            guard let range = range(&cursor), cursor.remaining == 2 || cursor.remaining == 16,
                let uuid = BluetoothUUID(littleEndian: cursor.rest())
            else { return nil }
            return opcode == .readByTypeRequest ? .readByTypeRequest(range, type: uuid) : .readByGroupTypeRequest(range, type: uuid)
        case .readByTypeResponse:
            guard let length = cursor.u8(), length >= 2, !cursor.isAtEnd, cursor.remaining % Int(length) == 0 else { return nil }
            var entries: [HandleValue] = []
            while !cursor.isAtEnd {
                let handle = cursor.attributeHandle()!
                entries.append(HandleValue(handle: handle, value: Array(cursor.take(Int(length) - 2)!)))
            }
            return .readByTypeResponse(entries)
        case .readByGroupTypeResponse:
            guard let length = cursor.u8(), length >= 4, !cursor.isAtEnd, cursor.remaining % Int(length) == 0 else { return nil }
            var entries: [GroupValue] = []
            while !cursor.isAtEnd {
                let handle = cursor.attributeHandle()!
                let end = cursor.attributeHandle()!
                entries.append(GroupValue(handle: handle, endGroupHandle: end, value: Array(cursor.take(Int(length) - 4)!)))
            }
            return .readByGroupTypeResponse(entries)
        case .readRequest:
            guard let handle = cursor.attributeHandle(), cursor.isAtEnd else { return nil }
            return .readRequest(handle: handle)
        case .readResponse: return .readResponse(value: Array(cursor.rest()))
        case .readBlobRequest:
            guard let handle = cursor.attributeHandle(), let offset = cursor.u16le(), cursor.isAtEnd else { return nil }
            return .readBlobRequest(handle: handle, offset: offset)
        case .readBlobResponse: return .readBlobResponse(value: Array(cursor.rest()))
        case .readMultipleRequest, .readMultipleVariableRequest:
            guard cursor.remaining >= 4, cursor.remaining % 2 == 0 else { return nil }
            var handles: [AttributeHandle] = []
            while let handle = cursor.attributeHandle() { handles.append(handle) }
            return opcode == .readMultipleRequest ? .readMultipleRequest(handles: handles) : .readMultipleVariableRequest(handles: handles)
        case .readMultipleResponse: return .readMultipleResponse(values: Array(cursor.rest()))
        case .readMultipleVariableResponse:
            var values: [[UInt8]] = []
            while !cursor.isAtEnd {
                guard let length = cursor.u16le() else { return nil }
                // The last value may be cut short by the MTU.
                let value = cursor.take(Int(length)) ?? cursor.rest()
                values.append(Array(value))
            }
            return .readMultipleVariableResponse(values: values)
        case .writeRequest, .writeCommand, .handleValueNotification, .handleValueIndication:
            guard let handle = cursor.attributeHandle() else { return nil }
            let value = Array(cursor.rest())
            switch opcode {
            case .writeRequest: return .writeRequest(handle: handle, value: value)
            case .writeCommand: return .writeCommand(handle: handle, value: value)
            case .handleValueNotification: return .handleValueNotification(handle: handle, value: value)
            default: return .handleValueIndication(handle: handle, value: value)
            }
        case .signedWriteCommand:
            guard let handle = cursor.attributeHandle(), cursor.remaining >= 12 else { return nil }
            return .signedWriteCommand(handle: handle, value: Array(cursor.take(cursor.remaining - 12)!))
        case .writeResponse: return cursor.isAtEnd ? .writeResponse : nil
        case .prepareWriteRequest, .prepareWriteResponse:
            guard let handle = cursor.attributeHandle(), let offset = cursor.u16le() else { return nil }
            let value = Array(cursor.rest())
            return opcode == .prepareWriteRequest
                ? .prepareWriteRequest(handle: handle, offset: offset, value: value)
                : .prepareWriteResponse(handle: handle, offset: offset, value: value)
        case .executeWriteRequest:
            guard let flags = cursor.u8(), cursor.isAtEnd else { return nil }
            return .executeWriteRequest(flags: flags)
        case .executeWriteResponse: return cursor.isAtEnd ? .executeWriteResponse : nil
        case .handleValueConfirmation: return cursor.isAtEnd ? .handleValueConfirmation : nil
        case .multipleHandleValueNotification:
            guard !cursor.isAtEnd else { return nil }
            var entries: [HandleValue] = []
            while !cursor.isAtEnd {
                guard let handle = cursor.attributeHandle(), let length = cursor.u16le(), let value = cursor.take(Int(length)) else {
                    return nil
                }
                entries.append(HandleValue(handle: handle, value: Array(value)))
            }
            return .multipleHandleValueNotification(entries)
        default:
            return .unknown
        }
    }

    private static func range(_ cursor: inout ByteCursor) -> HandleRange? {
        guard cursor.remaining >= 4 else { return nil }
        return HandleRange(start: cursor.attributeHandle()!, end: cursor.attributeHandle()!)
    }
}
