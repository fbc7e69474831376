/// An ATT PDU opcode (Core spec Vol 3 Part F 3.4.8).
public struct ATTOpcode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let errorResponse = ATTOpcode(rawValue: 0x01)
    public static let exchangeMTURequest = ATTOpcode(rawValue: 0x02)
    public static let exchangeMTUResponse = ATTOpcode(rawValue: 0x03)
    public static let findInformationRequest = ATTOpcode(rawValue: 0x04)
    public static let findInformationResponse = ATTOpcode(rawValue: 0x05)
    public static let findByTypeValueRequest = ATTOpcode(rawValue: 0x06)
    public static let findByTypeValueResponse = ATTOpcode(rawValue: 0x07)
    public static let readByTypeRequest = ATTOpcode(rawValue: 0x08)
    public static let readByTypeResponse = ATTOpcode(rawValue: 0x09)
    public static let readRequest = ATTOpcode(rawValue: 0x0A)
    public static let readResponse = ATTOpcode(rawValue: 0x0B)
    public static let readBlobRequest = ATTOpcode(rawValue: 0x0C)
    public static let readBlobResponse = ATTOpcode(rawValue: 0x0D)
    public static let readMultipleRequest = ATTOpcode(rawValue: 0x0E)
    public static let readMultipleResponse = ATTOpcode(rawValue: 0x0F)
    public static let readByGroupTypeRequest = ATTOpcode(rawValue: 0x10)
    public static let readByGroupTypeResponse = ATTOpcode(rawValue: 0x11)
    public static let writeRequest = ATTOpcode(rawValue: 0x12)
    public static let writeResponse = ATTOpcode(rawValue: 0x13)
    public static let prepareWriteRequest = ATTOpcode(rawValue: 0x16)
    public static let prepareWriteResponse = ATTOpcode(rawValue: 0x17)
    public static let executeWriteRequest = ATTOpcode(rawValue: 0x18)
    public static let executeWriteResponse = ATTOpcode(rawValue: 0x19)
    public static let readMultipleVariableRequest = ATTOpcode(rawValue: 0x20)
    public static let readMultipleVariableResponse = ATTOpcode(rawValue: 0x21)
    public static let multipleHandleValueNotification = ATTOpcode(rawValue: 0x23)
    public static let handleValueNotification = ATTOpcode(rawValue: 0x1B)
    public static let handleValueIndication = ATTOpcode(rawValue: 0x1D)
    public static let handleValueConfirmation = ATTOpcode(rawValue: 0x1E)
    public static let writeCommand = ATTOpcode(rawValue: 0x52)
    public static let signedWriteCommand = ATTOpcode(rawValue: 0xD2)

    private static let names: [UInt8: String] = [
        0x01: "Error Response", 0x02: "Exchange MTU Request", 0x03: "Exchange MTU Response",
        0x04: "Find Information Request", 0x05: "Find Information Response", 0x06: "Find By Type Value Request",
        0x07: "Find By Type Value Response", 0x08: "Read By Type Request", 0x09: "Read By Type Response",
        0x0A: "Read Request", 0x0B: "Read Response", 0x0C: "Read Blob Request", 0x0D: "Read Blob Response",
        0x0E: "Read Multiple Request", 0x0F: "Read Multiple Response", 0x10: "Read By Group Type Request",
        0x11: "Read By Group Type Response", 0x12: "Write Request", 0x13: "Write Response",
        0x16: "Prepare Write Request", 0x17: "Prepare Write Response", 0x18: "Execute Write Request",
        0x19: "Execute Write Response", 0x1B: "Handle Value Notification", 0x1D: "Handle Value Indication",
        0x1E: "Handle Value Confirmation", 0x20: "Read Multiple Variable Request", 0x21: "Read Multiple Variable Response",
        0x23: "Multiple Handle Value Notification", 0x52: "Write Command", 0xD2: "Signed Write Command",
    ]

    /// What kind of PDU: a request expecting a response, a response, a command, a notification, …
    public enum Kind: Sendable, Hashable { case request, response, command, notification, indication, confirmation, unknown }

    public var kind: Kind {
        switch rawValue {
        case 0x1B, 0x23: .notification
        case 0x1D: .indication
        case 0x1E: .confirmation
        case 0x52, 0xD2: .command
        case 0x01: .response
        case 0x02...0x21 where Self.names[rawValue] != nil: rawValue & 1 == 0 ? .request : .response
        default: .unknown
        }
    }

    /// The response a request is answered with (Error Response aside).
    public var response: ATTOpcode? {
        kind == .request ? ATTOpcode(rawValue: rawValue + 1) : nil
    }

    public var description: String { Self.names[rawValue] ?? "ATT opcode 0x" + HexDigits.pair(rawValue) }
}

/// An ATT error code (Core spec Vol 3 Part F 3.4.1.1), as carried by an Error Response.
public struct ATTErrorCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let invalidHandle = ATTErrorCode(rawValue: 0x01)
    public static let readNotPermitted = ATTErrorCode(rawValue: 0x02)
    public static let writeNotPermitted = ATTErrorCode(rawValue: 0x03)
    public static let invalidPDU = ATTErrorCode(rawValue: 0x04)
    public static let insufficientAuthentication = ATTErrorCode(rawValue: 0x05)
    public static let requestNotSupported = ATTErrorCode(rawValue: 0x06)
    public static let invalidOffset = ATTErrorCode(rawValue: 0x07)
    public static let insufficientAuthorization = ATTErrorCode(rawValue: 0x08)
    public static let prepareQueueFull = ATTErrorCode(rawValue: 0x09)
    public static let attributeNotFound = ATTErrorCode(rawValue: 0x0A)
    public static let attributeNotLong = ATTErrorCode(rawValue: 0x0B)
    public static let insufficientEncryptionKeySize = ATTErrorCode(rawValue: 0x0C)
    public static let invalidAttributeValueLength = ATTErrorCode(rawValue: 0x0D)
    public static let unlikelyError = ATTErrorCode(rawValue: 0x0E)
    public static let insufficientEncryption = ATTErrorCode(rawValue: 0x0F)
    public static let unsupportedGroupType = ATTErrorCode(rawValue: 0x10)
    public static let insufficientResources = ATTErrorCode(rawValue: 0x11)
    public static let databaseOutOfSync = ATTErrorCode(rawValue: 0x12)
    public static let valueNotAllowed = ATTErrorCode(rawValue: 0x13)

    private static let names: [UInt8: String] = [
        0x01: "invalid handle", 0x02: "read not permitted", 0x03: "write not permitted", 0x04: "invalid PDU",
        0x05: "insufficient authentication", 0x06: "request not supported", 0x07: "invalid offset",
        0x08: "insufficient authorization", 0x09: "prepare queue full", 0x0A: "attribute not found",
        0x0B: "attribute not long", 0x0C: "insufficient encryption key size", 0x0D: "invalid attribute value length",
        0x0E: "unlikely error", 0x0F: "insufficient encryption", 0x10: "unsupported group type",
        0x11: "insufficient resources", 0x12: "database out of sync", 0x13: "value not allowed",
        0xFC: "write request rejected", 0xFD: "CCCD improperly configured", 0xFE: "procedure already in progress",
        0xFF: "out of range",
    ]

    /// Application errors, 0x80–0x9F, are the device's own.
    public var isApplicationError: Bool { (0x80...0x9F).contains(rawValue) }

    /// Errors that tell the central to pair or encrypt first.
    public var asksForSecurity: Bool {
        [
            Self.insufficientAuthentication, .insufficientEncryption, .insufficientEncryptionKeySize,
            .insufficientAuthorization,
        ].contains(self)
    }

    public var description: String {
        Self.names[rawValue] ?? (isApplicationError ? "application error 0x" : "ATT error 0x") + HexDigits.pair(rawValue)
    }
}

/// The ATT MTU of a link: the largest ATT PDU it carries, always within ``valid`` (23…517).
public struct ATTMTU: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible {
    public let rawValue: UInt16

    /// nil outside ``valid``.
    public init?(rawValue: UInt16) {
        guard Self.valid.contains(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    /// nil for a number that is not a valid MTU (negative, too small, too large).
    public init?<Number: BinaryInteger>(exactly number: Number) {
        guard let value = UInt16(exactly: number) else { return nil }
        self.init(rawValue: value)
    }

    private init(unchecked value: UInt16) { rawValue = value }

    /// The MTUs a link can have: the LE minimum (Core spec) to BlueZ's and the phones' maximum.
    public static let valid: ClosedRange<UInt16> = 23...517
    /// Every LE link starts with this.
    public static let minimum = ATTMTU(unchecked: 23)
    /// The largest an ATT MTU can be.
    public static let maximum = ATTMTU(unchecked: 517)
    /// The longest attribute value.
    public static let maximumValueLength = 512

    /// The longest value one notification, indication or read response carries: MTU − 3.
    public var payload: Int { Int(rawValue) - 3 }
    /// The most one value in a Multiple Handle Value Notification carries (MTU − 5): bluetoothd sends a central that
    /// takes several notifications per PDU (BlueZ centrals) its notifications so, and cuts a longer value short
    /// without a word (BlueZ 5.66 to 5.84, `src/shared/gatt-server.c`, `bt_gatt_server_send_notification`).
    public var multipleNotificationPayload: Int { payload - 2 }

    public var description: String { String(rawValue) }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
