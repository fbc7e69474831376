import Bluetooth

/// The PDUs of one GATT operation as the central's stack sends it on a link of `mtu`: long values read with
/// Read Blob and written with Prepare/Execute Write, so that nothing is cut; values are at most ATT's 512 bytes.
enum ATTOperations {
    static let le16 = HCIPacket.le16

    /// A read at `offset`: Read Request (Read Blob Request past 0), then Read Blob Requests while the device's
    /// answer filled the PDU.
    static func read(_ handle: AttributeHandle, offset: Int, value: [UInt8], mtu: Int) -> [ATTStep] {
        let room = mtu - 1
        var steps: [ATTStep] = []
        var at = max(0, min(offset, Int(UInt16.max)))
        var rest = value[...]
        var first = true
        while true {
            let part = Array(rest.prefix(room))
            if first && at == 0 {
                steps += [.central(.readRequest, le16(handle.rawValue)), .device(.readResponse, part)]
            } else {
                steps += [.central(.readBlobRequest, le16(handle.rawValue) + le16(UInt16(clamping: at))), .device(.readBlobResponse, part)]
            }
            first = false
            rest = rest.dropFirst(part.count)
            at += part.count
            // A full answer may have more behind it: the central asks again (an empty answer ends it).
            guard part.count == room, at <= Int(UInt16.max) else { return steps }
        }
    }

    /// A write: Write Command, Write Request, or Prepare Write Requests and an Execute Write when it is longer
    /// than a Write Request holds; `failure` is the device's error instead of its answer to the request it names.
    static func write(
        _ handle: AttributeHandle, value: [UInt8], withResponse: Bool, mtu: Int, failure: (request: ATTOpcode, code: ATTErrorCode)? = nil
    ) -> [ATTStep] {
        guard withResponse else { return [.central(.writeCommand, le16(handle.rawValue) + value.prefix(mtu - 3))] }
        if value.count <= mtu - 3 {
            let request = ATTStep.central(.writeRequest, le16(handle.rawValue) + value)
            return [request, failure.map { .error(.writeRequest, handle: handle, $0.code) } ?? .device(.writeResponse)]
        }
        var steps: [ATTStep] = []
        var offset = 0
        while offset < value.count {
            let part = Array(value[offset..<min(offset + mtu - 5, value.count)])
            let parameters = le16(handle.rawValue) + le16(UInt16(clamping: offset)) + part
            steps.append(.central(.prepareWriteRequest, parameters))
            if let failure, failure.request == .prepareWriteRequest {
                return steps + [.error(.prepareWriteRequest, handle: handle, failure.code)]
            }
            steps.append(.device(.prepareWriteResponse, parameters))
            offset += part.count
        }
        steps.append(.central(.executeWriteRequest, [0x01]))
        if let failure { return steps + [.error(.executeWriteRequest, handle: handle, failure.code)] }
        return steps + [.device(.executeWriteResponse)]
    }

    /// A request the device refused, rebuilt from what the recording keeps of it (the opcode and handle); nil
    /// for requests that are not about one attribute.
    static func refused(_ request: ATTOpcode, handle: AttributeHandle, code: ATTErrorCode) -> [ATTStep]? {
        let sent: ATTStep
        switch request {
        case .readRequest: sent = .central(.readRequest, le16(handle.rawValue))
        case .readBlobRequest: sent = .central(.readBlobRequest, le16(handle.rawValue) + le16(0))
        case .writeRequest: sent = .central(.writeRequest, le16(handle.rawValue))
        case .prepareWriteRequest: sent = .central(.prepareWriteRequest, le16(handle.rawValue) + le16(0))
        case .executeWriteRequest: sent = .central(.executeWriteRequest, [0x01])
        default: return nil
        }
        return [sent, .error(request, handle: handle, code)]
    }

    /// A notification, or an indication and the central's confirmation.
    static func notification(_ handle: AttributeHandle, value: [UInt8], indication: Bool, mtu: Int) -> [ATTStep] {
        let parameters = le16(handle.rawValue) + value.prefix(mtu - 3)
        if indication { return [.device(.handleValueIndication, parameters), .central(.handleValueConfirmation)] }
        return [.device(.handleValueNotification, parameters)]
    }

    /// The client configuration write that (un)subscribes.
    static func subscribe(configuration: AttributeHandle, notify: Bool, indicate: Bool, mtu: Int, failure: ATTErrorCode? = nil) -> [ATTStep]
    {
        let bits: UInt8 = (notify ? 0x01 : 0) | (indicate ? 0x02 : 0)
        return write(configuration, value: [bits, 0x00], withResponse: true, mtu: mtu, failure: failure.map { (.writeRequest, $0) })
    }

    /// The MTU exchange: the central's receive MTU and the device's, both `mtu`.
    static func exchangeMTU(_ mtu: Int) -> [ATTStep] {
        let value = le16(UInt16(clamping: mtu))
        return [.central(.exchangeMTURequest, value), .device(.exchangeMTUResponse, value)]
    }
}
