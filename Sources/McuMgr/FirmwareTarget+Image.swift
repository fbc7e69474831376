import Digest

/// The image management group (1): state read and write, upload, erase, slot info — as Zephyr's img_mgmt answers
/// them, error codes included.
extension FirmwareTarget {
    /// A slot with an image and its flags as MCUboot reports them.
    public struct SlotState: Sendable, Equatable {
        public var slot: Int
        public var image: Image
        public var pending: Bool
        public var confirmed: Bool
        public var active: Bool
        public var permanent: Bool
    }

    /// Each slot with an image, as state read and state write answer (and `GET /v1/firmware` shows): slot 0 runs,
    /// slot 1 is pending or holds the image to revert to, "confirmed" when the running one is not.
    public var slots: [SlotState] {
        var slots = [SlotState(slot: 0, image: primary, pending: false, confirmed: confirmed, active: true, permanent: false)]
        if let secondary {
            slots.append(SlotState(slot: 1, image: secondary, pending: pending, confirmed: !confirmed, active: false, permanent: permanent))
        }
        return slots
    }

    var stateAnswer: CBOR { .map(["images": .array(slots.map(Self.entry)), "splitStatus": .int(0)]) }

    var stateSummary: String {
        var text = "slot 0 \(primary.version)\(confirmed ? " confirmed" : " (test, not confirmed)")"
        if let secondary { text += ", slot 1 \(secondary.version)\(pending ? (permanent ? " pending permanent" : " pending test") : "")" }
        return text
    }

    static func entry(_ state: SlotState) -> CBOR {
        .map([
            "slot": .int(state.slot), "version": .text(state.image.version.description), "hash": .bytes(state.image.hash),
            "bootable": .bool(state.image.bootable), "pending": .bool(state.pending), "confirmed": .bool(state.confirmed),
            "active": .bool(state.active), "permanent": .bool(state.permanent),
        ])
    }

    /// `{hash?, confirm?}`: marks slot 1 for test (or for good with `confirm`), or confirms the running image.
    mutating func stateWrite(_ body: CBOR) -> Result {
        let confirm = body["confirm"]?.bool ?? false
        let hash = body["hash"]?.bytes
        if hash == nil, !confirm { return .image(.invalidHash, "state write with neither hash nor confirm") }
        if let hash, hash.count != 32 { return .image(.invalidHash, "state write with a hash of \(hash.count) bytes") }
        if hash == nil || hash == primary.hash {
            guard confirm else { return .image(.testToActiveDenied, "state write: test of the running image") }
            let was = confirmed
            confirmed = true
            return Result(
                answer: stateAnswer, summary: was ? "confirm: the running image was confirmed already" : "confirm \(primary.version)",
                events: was ? [] : [.confirmed])
        }
        guard let secondary, hash == secondary.hash else { return .image(.hashNotFound, "state write: no slot has that hash") }
        guard !pending, confirmed else { return .image(.imageAlreadyPending, "state write: slot 1 is in use") }
        pending = true
        permanent = confirm
        return Result(
            answer: stateAnswer, summary: "\(confirm ? "mark permanent" : "test") \(secondary.version)",
            events: [.marked(slot: 1, permanent: confirm)])
    }

    /// One chunk: `{off, data, len?, sha?, upgrade?, image?}`. The answer is the next offset wanted (a chunk at another
    /// offset is dropped and the wanted one said again, so a client resumes); the last adds `match`.
    mutating func uploadChunk(_ body: CBOR) -> Result {
        guard let offsetValue = body["off"] else { return .image(.invalidOffset, "upload without an offset") }
        guard let offset = offsetValue.int, offset >= 0 else { return .image(.invalidOffset, "upload at an offset that is no offset") }
        guard let data = body["data"]?.bytes else { return Result(.management(.invalid), summary: "upload at \(offset) without data") }
        if offset == 0 {
            let sha = body["sha"]?.bytes ?? []
            if let upload, !sha.isEmpty, sha == upload.sha {
                return Result(
                    answer: .map(["off": .int(upload.bytes.count)]), summary: "upload resumed at \(upload.bytes.count)",
                    events: [.uploadResumed(offset: upload.bytes.count)])
            }
            upload = nil
            guard data.count >= 32 else { return .image(.invalidImageHeader, "upload: a first chunk of \(data.count) bytes") }
            guard let lengthValue = body["len"] else { return .image(.invalidLength, "upload: a first chunk without len") }
            guard let length = lengthValue.int, length > 0 else { return .image(.invalidLength, "upload: len is not a length") }
            let magic = UInt32(data[0]) | UInt32(data[1]) << 8 | UInt32(data[2]) << 16 | UInt32(data[3]) << 24
            guard magic == McuBootImage.magic else { return .image(.invalidImageHeaderMagic, "upload: not an MCUboot image") }
            guard sha.count <= 32 else { return .image(.invalidHash, "upload: a sha of \(sha.count) bytes") }
            guard !secondaryInUse else { return .image(.noFreeSlot, "upload: slot 1 is in use") }
            guard length <= configuration.slotSize else {
                return .image(.imageTooLarge, "upload: \(length) bytes, the slot holds \(configuration.slotSize)")
            }
            let version = McuBootImage.Version(
                major: data[20], minor: data[21], revision: UInt16(data[22]) | UInt16(data[23]) << 8,
                build: UInt32(data[24]) | UInt32(data[25]) << 8 | UInt32(data[26]) << 16 | UInt32(data[27]) << 24)
            if body["upgrade"]?.bool == true, version <= primary.version {
                return .image(.currentVersionIsNewer, "upload: \(version) is not newer than \(primary.version)")
            }
            secondary = nil
            upload = Upload(length: length, sha: sha, bytes: [])
            var result = append(data)
            result.events.insert(.uploadStarted(length: length), at: 0)
            return result
        }
        guard let upload, offset == upload.bytes.count else {
            let wanted = upload?.bytes.count ?? 0
            return Result(answer: .map(["off": .int(wanted)]), summary: "upload chunk at \(offset) dropped: \(wanted) is wanted")
        }
        return append(data)
    }

    /// Appends a chunk at the wanted offset; the last one makes slot 1's image.
    private mutating func append(_ data: [UInt8]) -> Result {
        guard var upload else { return .image(.unknown, "upload: none under way") }
        let offset = upload.bytes.count
        guard data.count <= upload.length - offset else {
            self.upload = nil
            return .image(.dataOverrun, "upload: \(data.count) bytes at \(offset) overrun the length \(upload.length)")
        }
        upload.bytes += data
        upload.digest.update(data)
        let next = upload.bytes.count
        guard next == upload.length else {
            self.upload = upload
            return Result(
                answer: .map(["off": .int(next)]), summary: "upload \(offset)+\(data.count) of \(upload.length)",
                events: [.uploadProgress(offset: next, length: upload.length)])
        }
        self.upload = nil
        var matches: Bool? = upload.sha.count == 32 ? upload.digest.finalize() == upload.sha : nil
        let wrongHash = wrongHashForNextImage
        wrongHashForNextImage = false
        if wrongHash, matches != nil { matches = false }
        var answer: [CBOR.Entry] = [CBOR.Entry(.text("off"), .int(next))]
        if let matches { answer.append(CBOR.Entry(.text("match"), .bool(matches))) }
        let image: Image?
        let problem: String?
        var notes: [String] = []
        do {
            let parsed = try McuBootImage(upload.bytes)
            // A wrong hash (a fault): what a device reports when its flash holds other bytes than it was sent.
            let hash = wrongHash ? parsed.hash.enumerated().map { $0.offset == 0 ? $0.element ^ 0xFF : $0.element } : parsed.hash
            // An encrypted image's hash is of the plain image: MCUboot checks it while decrypting with the device's
            // key, which gattemu has not; the TLV's hash stands, as the image manager reports it.
            let valid = parsed.hashMatches || parsed.isEncrypted
            if parsed.isEncrypted { notes.append("encrypted: its SHA-256 is taken as its TLV states") }
            image = valid ? Image(version: parsed.version, hash: hash, bootable: parsed.flags & 0x10 == 0, size: upload.length) : nil
            problem = valid ? nil : "the image's SHA-256 is not the one its TLV states"
        } catch {
            image = nil
            problem = error.description
        }
        secondary = image
        pending = false
        permanent = false
        var events: [Event] = [
            .uploadProgress(offset: next, length: upload.length), .uploadFinished(image: image, problem: problem, matches: matches),
        ]
        // The upload filled the slot and ends in MCUboot's trailer (imgtool --pad, --confirm): the next reset swaps
        // the image in without a state write, as on the board.
        if image != nil, upload.length == configuration.slotSize, let mark = McuBootImage.trailerMark(of: upload.bytes) {
            pending = true
            permanent = mark == .permanent
            notes.append("its trailer marks it \(permanent ? "for good (image_ok set)" : "for test")")
            events.append(.marked(slot: 1, permanent: permanent))
        }
        let what =
            image.map { "slot 1 now \($0.version)" + (wrongHash ? " (kept with a wrong hash: a fault)" : "") }
            ?? "no valid image: \(problem ?? "")"
        return Result(
            answer: .map(answer),
            summary: "upload \(offset)+\(data.count): complete, \(upload.length) bytes; \(what)"
                + notes.map { "; \($0)" }.joined() + (matches.map { $0 ? "" : "; sha does not match" } ?? ""),
            events: events)
    }

    mutating func erase(_ body: CBOR) -> Result {
        let slot = body["slot"]?.int ?? 1
        guard slot == 1 else { return .image(.invalidSlot, "erase of slot \(slot)") }
        guard !secondaryInUse else { return .image(.noFreeSlot, "erase: slot 1 is in use") }
        secondary = nil
        upload = nil
        return Result(answer: .map([:]), summary: "erase slot 1", events: [.erased(slot: 1)])
    }

    var slotInfo: Result {
        let size = configuration.slotSize
        return Result(
            answer: .map([
                "images": .array([
                    .map([
                        "image": .int(0),
                        "slots": .array([
                            .map(["slot": .int(0), "size": .int(size)]),
                            .map(["slot": .int(1), "size": .int(size), "upload_image_id": .int(0)]),
                        ]), "max_image_size": .int(size),
                    ])
                ])
            ]), summary: "slot info: two slots of \(size) bytes")
    }
}
