import Digest

/// An MCUboot image as `imgtool` builds it: a 32-byte little-endian header, the image, then the TLV areas
/// (protected first, when there is one; then the unprotected one), among them the SHA-256 of header, image and
/// protected TLVs, which is the hash SMP reports for a slot.
public struct McuBootImage: Sendable, Equatable {
    public static let magic: UInt32 = 0x96F3_B83D
    public static let headerSize = 32
    static let tlvInfoMagic: UInt16 = 0x6907
    static let protectedTLVInfoMagic: UInt16 = 0x6908
    /// The TLV holding the image's SHA-256.
    public static let sha256TLV: UInt16 = 0x10
    /// Header flags `IMAGE_F_ENCRYPTED_AES128` and `IMAGE_F_ENCRYPTED_AES256`: the image is stored encrypted, and its
    /// hash (and signature) are of the plain image, which only a device holding the key can check.
    public static let encryptedFlags: UInt32 = 0x04 | 0x08
    /// The 16 bytes MCUboot finds at the end of a slot whose image is to be swapped in (`boot_img_magic`; imgtool
    /// writes them with `--pad`).
    public static let trailerMagic: [UInt8] = [
        0x77, 0xC2, 0x95, 0xF3, 0x60, 0xD2, 0xEF, 0x7F, 0x35, 0x52, 0x50, 0x0F, 0x2C, 0xB6, 0x79, 0x80,
    ]

    /// What the trailer at the end of a slot's bytes asks of MCUboot at the next reset.
    public enum TrailerMark: Sendable, Equatable {
        /// Swap it in for test (the magic, `image_ok` unset): imgtool `--pad`.
        case test
        /// Swap it in for good (`image_ok` = 1 too): imgtool `--confirm`.
        case permanent
    }

    /// The mark of a slot holding `slot` (the slot's whole size): the magic in its last 16 bytes and, with the
    /// default 8-byte write alignment imgtool pads for, `image_ok` 8 bytes before the magic's aligned start; nil
    /// without the magic (an erased trailer).
    public static func trailerMark(of slot: [UInt8]) -> TrailerMark? {
        guard slot.count >= trailerMagic.count + 8, slot.suffix(trailerMagic.count).elementsEqual(trailerMagic) else { return nil }
        return slot[slot.count - trailerMagic.count - 8] == 0x01 ? .permanent : .test
    }

    /// Stored encrypted (``encryptedFlags``).
    public var isEncrypted: Bool { flags & Self.encryptedFlags != 0 }

    public struct Version: Sendable, Equatable, Comparable, CustomStringConvertible {
        public var major: UInt8
        public var minor: UInt8
        public var revision: UInt16
        public var build: UInt32

        public init(major: UInt8, minor: UInt8, revision: UInt16, build: UInt32 = 0) {
            self.major = major
            self.minor = minor
            self.revision = revision
            self.build = build
        }

        /// `1.2.3`, or `1.2.3.4` when the build number is not 0 (as Zephyr's image state read writes it).
        public var description: String { "\(major).\(minor).\(revision)" + (build == 0 ? "" : ".\(build)") }

        /// `1.2.3` or `1.2.3.4`, each part within its field's range; nil otherwise.
        public init?(parsing text: String) {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            guard (3...4).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isWholeNumber } }),
                let major = UInt8(parts[0]), let minor = UInt8(parts[1]), let revision = UInt16(parts[2])
            else { return nil }
            let build = parts.count == 4 ? UInt32(parts[3]) : 0
            guard let build else { return nil }
            self.init(major: major, minor: minor, revision: revision, build: build)
        }

        public static func < (a: Version, b: Version) -> Bool {
            (a.major, a.minor, a.revision, a.build) < (b.major, b.minor, b.revision, b.build)
        }
    }

    public struct TLV: Sendable, Equatable {
        public var type: UInt16
        public var value: [UInt8]
        public var protected: Bool
    }

    /// Why bytes are not an MCUboot image.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    public var loadAddress: UInt32
    /// The header's size as the image says it (imgtool pads the header, typically to 0x200).
    public var headerSize: Int
    public var protectedTLVSize: Int
    public var imageSize: Int
    public var flags: UInt32
    public var version: Version
    public var tlvs: [TLV]
    /// The SHA-256 TLV's value.
    public var hash: [UInt8]
    /// Whether the SHA-256 of header, image and protected TLVs is the one the TLV states.
    public var hashMatches: Bool
    /// The image's whole length, TLVs included.
    public var size: Int

    /// Reads `bytes` as an image; any inconsistency (magic, sizes past the end, a TLV area that does not add up, no
    /// SHA-256) is a ``Problem``.
    public init(_ bytes: [UInt8]) throws(Problem) {
        func u16(_ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
        func u32(_ at: Int) -> UInt32 { UInt32(u16(at)) | UInt32(u16(at + 2)) << 16 }
        guard bytes.count >= Self.headerSize else { throw Problem("\(bytes.count) bytes: shorter than an image header (32)") }
        guard u32(0) == Self.magic else { throw Problem("no MCUboot magic (0x96f3b83d) at the start") }
        loadAddress = u32(4)
        headerSize = Int(u16(8))
        protectedTLVSize = Int(u16(10))
        imageSize = Int(u32(12))
        flags = u32(16)
        version = Version(major: bytes[20], minor: bytes[21], revision: u16(22), build: u32(24))
        guard headerSize >= Self.headerSize else { throw Problem("a header size of \(headerSize), less than 32") }
        var offset = headerSize + imageSize
        guard offset <= bytes.count else {
            throw Problem("header and image take \(offset) bytes, the file has \(bytes.count)")
        }
        let hashed = offset + protectedTLVSize
        var tlvs: [TLV] = []
        func area(magic: UInt16, protected: Bool) throws(Problem) -> Int {
            guard offset + 4 <= bytes.count, u16(offset) == magic else {
                throw Problem("no TLV area (magic 0x\(String(magic, radix: 16))) at byte \(offset)")
            }
            let total = Int(u16(offset + 2))
            guard total >= 4, offset + total <= bytes.count else { throw Problem("a TLV area of \(total) bytes past the end") }
            var at = offset + 4
            while at < offset + total {
                guard at + 4 <= offset + total else { throw Problem("a TLV header cut at byte \(at)") }
                let length = Int(u16(at + 2))
                guard at + 4 + length <= offset + total else { throw Problem("a TLV of \(length) bytes past its area at byte \(at)") }
                tlvs.append(TLV(type: u16(at), value: Array(bytes[(at + 4)..<(at + 4 + length)]), protected: protected))
                at += 4 + length
            }
            return total
        }
        if protectedTLVSize > 0 {
            let total = try area(magic: Self.protectedTLVInfoMagic, protected: true)
            guard total == protectedTLVSize else {
                throw Problem("the protected TLV area says \(total) bytes, the header \(protectedTLVSize)")
            }
            offset += total
        }
        offset += try area(magic: Self.tlvInfoMagic, protected: false)
        self.tlvs = tlvs
        size = offset
        guard let sha = tlvs.first(where: { $0.type == Self.sha256TLV && !$0.protected }), sha.value.count == 32 else {
            throw Problem("no SHA-256 TLV (type 0x10, 32 bytes)")
        }
        hash = sha.value
        hashMatches = SHA256.hash(bytes[0..<hashed]) == sha.value
    }
}
