/// The SMP error codes a device answers with: the management layer's (`MGMT_ERR_*`, the `rc` of SMP v1 and of
/// failures below the groups) and the groups' own (`IMG_MGMT_ERR_*`, `OS_MGMT_ERR_*`, the `err.rc` of SMP v2), with
/// the translation a v1 client gets of a group's error, as Zephyr's mcumgr does it.
public enum SMPManagementError: Int, Sendable {
    case ok = 0
    case unknown = 1
    case noMemory = 2
    case invalid = 3
    case timeout = 4
    case noEntry = 5
    case badState = 6
    case messageTooLong = 7
    case notSupported = 8
    case corrupt = 9
    case busy = 10
    case accessDenied = 11
    case tooOld = 12
    case tooNew = 13
}

/// An error of one group, answered as `{"err": {"group", "rc"}}` to SMP v2 and as its ``translated`` code to v1.
public struct SMPGroupError: Error, Sendable, Equatable {
    public var group: UInt16
    public var rc: Int

    public init(group: UInt16, rc: Int) {
        self.group = group
        self.rc = rc
    }

    /// Image management (`IMG_MGMT_ERR_*`), the codes this target answers with.
    public enum Image: Int, Sendable {
        case unknown = 1
        case noImage = 3
        case noTLVs = 4
        case hashNotFound = 8
        case noFreeSlot = 9
        case flashWriteFailed = 12
        case flashEraseFailed = 13
        case invalidSlot = 14
        case invalidOffset = 20
        case invalidLength = 21
        case invalidImageHeader = 22
        case invalidImageHeaderMagic = 23
        case invalidHash = 24
        case currentVersionIsNewer = 27
        case imageAlreadyPending = 28
        case imageTooLarge = 30
        case dataOverrun = 31
        case confirmationDenied = 32
        case testToActiveDenied = 33
    }

    /// OS management (`OS_MGMT_ERR_*`).
    public enum OS: Int, Sendable {
        case unknown = 1
        case invalidFormat = 2
        case queryYieldsNoAnswer = 3
    }

    public static func image(_ code: Image) -> SMPGroupError { SMPGroupError(group: SMPGroup.image, rc: code.rawValue) }
    public static func os(_ code: OS) -> SMPGroupError { SMPGroupError(group: SMPGroup.os, rc: code.rawValue) }

    /// The v1 code for this error (Zephyr's `img_mgmt_translate_error_code` and `os_mgmt_translate_error_code`).
    public var translated: SMPManagementError {
        switch (group, rc) {
        case (SMPGroup.image, Image.noImage.rawValue), (SMPGroup.image, Image.noTLVs.rawValue): .noEntry
        case (SMPGroup.image, Image.noFreeSlot.rawValue), (SMPGroup.image, Image.currentVersionIsNewer.rawValue),
            (SMPGroup.image, Image.imageAlreadyPending.rawValue):
            .badState
        case (SMPGroup.image, Image.invalidSlot.rawValue), (SMPGroup.image, Image.invalidOffset.rawValue),
            (SMPGroup.image, Image.invalidLength.rawValue), (SMPGroup.image, Image.invalidImageHeader.rawValue),
            (SMPGroup.image, Image.invalidImageHeaderMagic.rawValue), (SMPGroup.image, Image.invalidHash.rawValue),
            (SMPGroup.image, Image.imageTooLarge.rawValue), (SMPGroup.image, Image.dataOverrun.rawValue):
            .invalid
        case (SMPGroup.os, OS.invalidFormat.rawValue): .invalid
        default: .unknown
        }
    }
}

/// Group ids (SMP's "management groups").
public enum SMPGroup {
    public static let os: UInt16 = 0
    public static let image: UInt16 = 1
}

extension SMPPacket {
    /// The answer to `request` that is a group's error: `{"err": {"group", "rc"}}` to SMP v2, `{"rc": translated}` to v1.
    public init(answering request: SMPHeader, error: SMPGroupError) {
        self.init(
            answering: request,
            body: request.version >= 1
                ? .map(["err": .map(["group": .int(Int(error.group)), "rc": .int(error.rc)])])
                : .map(["rc": .int(error.translated.rawValue)]))
    }

    /// The answer to `request` that is a management error alone (`{"rc": N}`): below the groups, or where a device
    /// refuses before a group sees the request (busy, too long).
    public init(answering request: SMPHeader, error code: SMPManagementError) {
        self.init(answering: request, body: .map(["rc": .int(code.rawValue)]))
    }
}
