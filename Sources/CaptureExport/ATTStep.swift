import Bluetooth

/// One ATT PDU of an exported session and who sent it: the central (the phone whose log it is) or the device.
struct ATTStep: Sendable, Hashable {
    var fromCentral: Bool
    var pdu: [UInt8]

    static func central(_ opcode: ATTOpcode, _ parameters: [UInt8] = []) -> ATTStep {
        ATTStep(fromCentral: true, pdu: HCIPacket.att(opcode, parameters))
    }

    static func device(_ opcode: ATTOpcode, _ parameters: [UInt8] = []) -> ATTStep {
        ATTStep(fromCentral: false, pdu: HCIPacket.att(opcode, parameters))
    }

    /// The device's Error Response to a `request` on `handle`.
    static func error(_ request: ATTOpcode, handle: AttributeHandle, _ code: ATTErrorCode) -> ATTStep {
        device(.errorResponse, [request.rawValue] + HCIPacket.le16(handle.rawValue) + [code.rawValue])
    }
}
