import Bluetooth

/// An ATT PDU's parameters decoded by opcode (Core spec Vol 3 Part F 3.4). Values are copies; UUIDs as
/// ``BluetoothUUID``. Parameters that do not fit their opcode's layout decode as ``malformed(_:)``.
public enum ATTMessage: Sendable, Hashable {
    case errorResponse(request: ATTOpcode, handle: AttributeHandle, error: ATTErrorCode)
    case exchangeMTURequest(clientMTU: UInt16)
    case exchangeMTUResponse(serverMTU: UInt16)
    case findInformationRequest(HandleRange)
    case findInformationResponse([HandleUUID])
    case findByTypeValueRequest(HandleRange, type: BluetoothUUID, value: [UInt8])
    case findByTypeValueResponse([HandleRange])
    case readByTypeRequest(HandleRange, type: BluetoothUUID)
    case readByTypeResponse([HandleValue])
    case readRequest(handle: AttributeHandle)
    case readResponse(value: [UInt8])
    case readBlobRequest(handle: AttributeHandle, offset: UInt16)
    case readBlobResponse(value: [UInt8])
    case readMultipleRequest(handles: [AttributeHandle])
    /// The values run together; which bytes belong to which handle only the attribute table knows.
    case readMultipleResponse(values: [UInt8])
    case readMultipleVariableRequest(handles: [AttributeHandle])
    case readMultipleVariableResponse(values: [[UInt8]])
    case readByGroupTypeRequest(HandleRange, type: BluetoothUUID)
    case readByGroupTypeResponse([GroupValue])
    case writeRequest(handle: AttributeHandle, value: [UInt8])
    case writeResponse
    case writeCommand(handle: AttributeHandle, value: [UInt8])
    /// The 12-byte signature is left out of `value`.
    case signedWriteCommand(handle: AttributeHandle, value: [UInt8])
    case prepareWriteRequest(handle: AttributeHandle, offset: UInt16, value: [UInt8])
    case prepareWriteResponse(handle: AttributeHandle, offset: UInt16, value: [UInt8])
    /// `flags` 0x00 cancels the queued writes, 0x01 writes them.
    case executeWriteRequest(flags: UInt8)
    case executeWriteResponse
    case handleValueNotification(handle: AttributeHandle, value: [UInt8])
    case handleValueIndication(handle: AttributeHandle, value: [UInt8])
    case handleValueConfirmation
    case multipleHandleValueNotification([HandleValue])
    /// An opcode this decoder does not know; the parameters are the PDU's.
    case unknown
    case malformed(String)

    /// An inclusive handle range (and, in Find By Type Value responses, found handle and group end).
    public struct HandleRange: Sendable, Hashable {
        public var start: AttributeHandle
        public var end: AttributeHandle
        public init(start: AttributeHandle, end: AttributeHandle) {
            self.start = start
            self.end = end
        }
    }

    /// A handle and its attribute type (Find Information responses).
    public struct HandleUUID: Sendable, Hashable {
        public var handle: AttributeHandle
        public var uuid: BluetoothUUID
        public init(handle: AttributeHandle, uuid: BluetoothUUID) {
            self.handle = handle
            self.uuid = uuid
        }
    }

    /// A handle and its value (Read By Type responses, Multiple Handle Value Notifications).
    public struct HandleValue: Sendable, Hashable {
        public var handle: AttributeHandle
        public var value: [UInt8]

        public init(handle: AttributeHandle, value: [UInt8]) {
            self.handle = handle
            self.value = value
        }

        /// The value as a characteristic declaration (type 0x2803): properties, value handle, UUID.
        public var characteristicDeclaration: CharacteristicDeclaration? {
            guard value.count == 5 || value.count == 19, let uuid = BluetoothUUID(littleEndian: value[3...]) else { return nil }
            return CharacteristicDeclaration(
                handle: handle, properties: CharacteristicProperties(rawValue: value[0]),
                valueHandle: AttributeHandle(rawValue: UInt16(value[1]) | UInt16(value[2]) << 8), uuid: uuid)
        }

        /// The value as an include declaration (type 0x2802): service handle range and, for 16-bit UUIDs, the UUID.
        public var includeDeclaration: IncludeDeclaration? {
            guard value.count == 4 || value.count == 6 else { return nil }
            return IncludeDeclaration(
                handle: handle,
                serviceRange: HandleRange(
                    start: AttributeHandle(rawValue: UInt16(value[0]) | UInt16(value[1]) << 8),
                    end: AttributeHandle(rawValue: UInt16(value[2]) | UInt16(value[3]) << 8)),
                uuid: value.count == 6 ? BluetoothUUID(littleEndian: value[4...]) : nil)
        }
    }

    /// A group's handle range and value (Read By Group Type responses: for services, the service UUID).
    public struct GroupValue: Sendable, Hashable {
        public var handle: AttributeHandle
        public var endGroupHandle: AttributeHandle
        public var value: [UInt8]

        public init(handle: AttributeHandle, endGroupHandle: AttributeHandle, value: [UInt8]) {
            self.handle = handle
            self.endGroupHandle = endGroupHandle
            self.value = value
        }

        /// The value as a service UUID (2 or 16 bytes).
        public var uuid: BluetoothUUID? { BluetoothUUID(littleEndian: value) }
    }

    /// A characteristic declaration read through Read By Type (0x2803).
    public struct CharacteristicDeclaration: Sendable, Hashable {
        /// The declaration's own handle.
        public var handle: AttributeHandle
        public var properties: CharacteristicProperties
        public var valueHandle: AttributeHandle
        public var uuid: BluetoothUUID

        public init(handle: AttributeHandle, properties: CharacteristicProperties, valueHandle: AttributeHandle, uuid: BluetoothUUID) {
            self.handle = handle
            self.properties = properties
            self.valueHandle = valueHandle
            self.uuid = uuid
        }
    }

    /// An include declaration read through Read By Type (0x2802).
    public struct IncludeDeclaration: Sendable, Hashable {
        public var handle: AttributeHandle
        public var serviceRange: HandleRange
        /// Present only for 16-bit service UUIDs; 128-bit ones need a read of the service declaration.
        public var uuid: BluetoothUUID?

        public init(handle: AttributeHandle, serviceRange: HandleRange, uuid: BluetoothUUID?) {
            self.handle = handle
            self.serviceRange = serviceRange
            self.uuid = uuid
        }
    }
}
