import Digest

/// A device's firmware as an SMP (mcumgr) client sees it: two image slots under MCUboot (swap with revert), the
/// OS and image management groups, uploads in chunks, and what a reset boots into. Pure: it takes packets and
/// answers them, and says what happened (``Event``); the transport (GATT, reassembly, MTU) and time (boot delays,
/// faults) are its caller's.
public struct FirmwareTarget: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// The largest SMP packet taken, header included (`mcumgr params`' `buf_size`).
        public var bufferSize = 2475
        /// `mcumgr params`' `buf_count`.
        public var bufferCount = 4
        /// The slots' size: the largest image an upload may bring.
        public var slotSize = 0x6_0000
        /// MCUboot's mode as bootloader info reports it (3: swap without scratch, which reverts an unconfirmed image).
        public var bootloaderMode = 3
        /// Whether MCUboot refuses an older image (`no-downgrade`).
        public var noDowngrade = false
        /// OS/application info's fields by format letter (`s` kernel name, `n` node name, `r` release, `v` version,
        /// `b` build time, `m` machine, `p` processor, `i` platform, `o` OS).
        public var info: [Character: String] = [
            "s": "Zephyr", "n": "gattemu", "r": "3.7.0", "v": "v3.7.0", "b": "Nov 30 2026 00:00:00", "m": "arm",
            "p": "cortex-m4", "i": "gattemu_smp", "o": "Zephyr",
        ]

        public init() {}
    }

    /// What a slot holds.
    public struct Image: Sendable, Equatable {
        public var version: McuBootImage.Version
        /// The SHA-256 TLV's value (32 bytes).
        public var hash: [UInt8]
        public var bootable = true
        public var size = 0

        public init(version: McuBootImage.Version, hash: [UInt8], bootable: Bool = true, size: Int = 0) {
            self.version = version
            self.hash = hash
            self.bootable = bootable
            self.size = size
        }
    }

    /// What happened, for the event log and the dashboard.
    public enum Event: Sendable, Equatable {
        case uploadStarted(length: Int)
        case uploadProgress(offset: Int, length: Int)
        /// The whole image arrived: the image in slot 1, or why it is not a bootable image.
        case uploadFinished(image: Image?, problem: String?, matches: Bool?)
        case uploadResumed(offset: Int)
        case marked(slot: Int, permanent: Bool)
        case confirmed
        case erased(slot: Int)
        /// The client asked for a reset: the caller disconnects and boots the device (``boot()``).
        case resetRequested
    }

    /// One request handled: the answer to send (nil: none), a one-line account of it, and what happened.
    public struct Outcome: Sendable, Equatable {
        public var answer: SMPPacket?
        public var summary: String
        public var events: [Event] = []
    }

    /// What a reset did.
    public enum Boot: Sendable, Equatable {
        /// Nothing pending: the same image runs.
        case same(Image)
        /// The pending image was swapped in (``Image``), to be confirmed (`permanent` false) or for good.
        case swapped(to: Image, permanent: Bool)
        /// The running image was never confirmed: MCUboot swapped the previous one back.
        case reverted(to: Image)
    }

    struct Upload: Sendable {
        var length: Int
        var sha: [UInt8]
        var bytes: [UInt8]
        var digest = SHA256()
    }

    public var configuration: Configuration
    /// Slot 0: the running image.
    public internal(set) var primary: Image
    /// Slot 1.
    public internal(set) var secondary: Image?
    /// Slot 1 is marked for test (or for good, ``permanent``).
    public internal(set) var pending = false
    public internal(set) var permanent = false
    /// The running image is confirmed (false after a test swap until the client confirms it).
    public internal(set) var confirmed = true
    var upload: Upload?
    /// A `wrongHash` fault fired: the next image an upload completes gets a wrong hash.
    var wrongHashForNextImage = false

    public init(running: Image, configuration: Configuration = Configuration()) {
        primary = running
        self.configuration = configuration
    }

    /// Bytes of the upload under way that arrived, and its length (nil: none under way).
    public var uploadProgress: (offset: Int, length: Int)? { upload.map { ($0.bytes.count, $0.length) } }

    /// Slot 1 is in use: marked, or holding the image to revert to.
    var secondaryInUse: Bool { pending || !confirmed }

    // MARK: Booting

    /// What MCUboot does at a reset: a pending image is swapped in (kept for good when it was marked permanent,
    /// else run until confirmed); an image never confirmed is swapped back out; else nothing changes. An upload
    /// under way is lost.
    public mutating func boot() -> Boot {
        upload = nil
        wrongHashForNextImage = false
        if pending, let next = secondary {
            secondary = primary
            primary = next
            pending = false
            confirmed = permanent
            defer { permanent = false }
            return .swapped(to: next, permanent: permanent)
        }
        if !confirmed, let previous = secondary {
            secondary = primary
            primary = previous
            confirmed = true
            return .reverted(to: previous)
        }
        return .same(primary)
    }

    // MARK: Requests

    /// Answers one request packet.
    public mutating func handle(_ packet: SMPPacket) -> Outcome {
        let header = packet.header
        let what = "\(Self.name(group: header.group, command: header.command)) seq \(header.sequence)"
        guard header.operation.isRequest else { return Outcome(answer: nil, summary: "\(what): a response sent to the device, ignored") }
        guard header.version <= 1 else {
            return Outcome(
                answer: SMPPacket(answering: header, error: .tooNew), summary: "\(what): SMP version \(header.version) refused (rc 13)")
        }
        guard let body = try? CBOR(decoding: packet.body), case .map = body else {
            return Outcome(answer: SMPPacket(answering: header, error: .invalid), summary: "\(what): the body is not a CBOR map (rc 3)")
        }
        let read = header.operation == .read
        var result: Result
        switch (header.group, header.command, read) {
        case (SMPGroup.os, 0, _): result = echo(body)
        case (SMPGroup.os, 5, false): result = Result(answer: .map([:]), summary: "reset", events: [.resetRequested])
        case (SMPGroup.os, 6, true):
            result = Result(
                answer: .map(["buf_size": .int(configuration.bufferSize), "buf_count": .int(configuration.bufferCount)]),
                summary: "params: buf_size \(configuration.bufferSize), buf_count \(configuration.bufferCount)")
        case (SMPGroup.os, 7, true): result = info(body)
        case (SMPGroup.os, 8, true): result = bootloaderInfo(body)
        case (SMPGroup.image, 0, true): result = Result(answer: stateAnswer, summary: "state read: \(stateSummary)")
        case (SMPGroup.image, 0, false): result = stateWrite(body)
        case (SMPGroup.image, 1, false): result = uploadChunk(body)
        case (SMPGroup.image, 5, false): result = erase(body)
        case (SMPGroup.image, 6, true): result = slotInfo
        default:
            return Outcome(
                answer: SMPPacket(answering: header, error: .notSupported),
                summary: "\(what) (op \(header.operation.rawValue)): not supported (rc 8)")
        }
        let answer: SMPPacket
        switch result.answer {
        case .success(let body): answer = SMPPacket(answering: header, body: body)
        case .failure(.group(let error)):
            answer = SMPPacket(answering: header, error: error)
            result.summary += " (\(Self.code(of: error, for: header)))"
        case .failure(.management(let code)):
            answer = SMPPacket(answering: header, error: code)
            result.summary += " (rc \(code.rawValue))"
        }
        return Outcome(answer: answer, summary: "\(what): \(result.summary)", events: result.events)
    }

    /// How the client sees a group's error: `err.rc N` (SMP v2) or `rc N` (v1, translated).
    public static func code(of error: SMPGroupError, for request: SMPHeader) -> String {
        request.version >= 1 ? "err.rc \(error.rc)" : "rc \(error.translated.rawValue)"
    }

    // MARK: Faults

    /// What a request is to the fault engine: an upload chunk (with the share of the image the upload reaches with
    /// it), a confirm, a reset; nil for any other request.
    public enum FaultPoint: Sendable, Equatable {
        case upload(percent: Int)
        case confirm
        case reset
    }

    /// The fault point of `packet` (read without changing anything).
    public func faultPoint(of packet: SMPPacket) -> FaultPoint? {
        let header = packet.header
        guard header.operation == .write else { return nil }
        switch (header.group, header.command) {
        case (SMPGroup.os, 5): return .reset
        case (SMPGroup.image, 0):
            guard let body = try? CBOR(decoding: packet.body), body["confirm"]?.bool == true else { return nil }
            return .confirm
        case (SMPGroup.image, 1):
            guard let body = try? CBOR(decoding: packet.body), let offset = body["off"]?.int, offset >= 0 else {
                return .upload(percent: 0)
            }
            let count = body["data"]?.bytes?.count ?? 0
            let length = offset == 0 ? body["len"]?.int : upload?.length
            guard let length, length > 0 else { return .upload(percent: 0) }
            let reached = offset.addingReportingOverflow(count)
            return .upload(percent: reached.overflow ? 100 : Swift.min(100, Int(Double(reached.partialValue) * 100 / Double(length))))
        default: return nil
        }
    }

    /// The next image an upload completes is kept with a wrong hash (`wrongHash`): its answer says `match` false, state
    /// read shows that hash, and marking it by its own hash finds nothing.
    public mutating func keepNextImageWithWrongHash() { wrongHashForNextImage = true }

    /// The image waiting in slot 1 is lost (`losePending`); false when none was pending.
    @discardableResult
    public mutating func losePendingImage() -> Bool {
        guard pending else { return false }
        secondary = nil
        pending = false
        permanent = false
        return true
    }

    enum Failure: Error, Equatable {
        case group(SMPGroupError)
        case management(SMPManagementError)
    }

    struct Result {
        var answer: Swift.Result<CBOR, Failure>
        var summary: String
        var events: [Event] = []

        init(answer: CBOR, summary: String, events: [Event] = []) {
            self.answer = .success(answer)
            self.summary = summary
            self.events = events
        }

        init(_ failure: Failure, summary: String) {
            answer = .failure(failure)
            self.summary = summary
        }

        static func image(_ code: SMPGroupError.Image, _ summary: String) -> Result { Result(.group(.image(code)), summary: summary) }
    }

    /// `os echo`, `image upload`, …: the group and command by name, for the log.
    public static func name(group: UInt16, command: UInt8) -> String {
        switch (group, command) {
        case (0, 0): "os echo"
        case (0, 5): "os reset"
        case (0, 6): "os params"
        case (0, 7): "os info"
        case (0, 8): "os bootloader info"
        case (1, 0): "image state"
        case (1, 1): "image upload"
        case (1, 5): "image erase"
        case (1, 6): "image slot info"
        default: "group \(group) command \(command)"
        }
    }
}
