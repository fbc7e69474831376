import Digest
import Foundation
import McuMgr
import Testing

/// MCUboot images as imgtool makes them (Tests/McuMgrTests/Fixtures, made by imgtool 2.5.0): header, version, the
/// TLVs and the SHA-256 that SMP reports, checked against what the image states; damaged images are refused.
@Suite struct McuBootImageTests {
    static func fixture(_ name: String) throws -> [UInt8] {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil))
        return Array(try Data(contentsOf: url))
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() }

    @Test func anImageImgtoolMadeIsRead() throws {
        let bytes = try Self.fixture("app-1.2.3+4.bin")
        let image = try McuBootImage(bytes)
        #expect(image.version == McuBootImage.Version(major: 1, minor: 2, revision: 3, build: 4))
        #expect(image.version.description == "1.2.3.4")
        #expect(image.headerSize == 0x200 && image.imageSize == 3000 && image.protectedTLVSize == 0)
        #expect(Self.hex(image.hash) == "3412a80ce8180ab90a171e9248f9860cf4a4437f4d5017bd1510547e66ff6828")
        #expect(image.hashMatches)
        #expect(image.size == bytes.count)
    }

    @Test func theHashCoversTheProtectedTLVs() throws {
        let image = try McuBootImage(try Self.fixture("app-2.0.0-counter7.bin"))
        #expect(image.version.description == "2.0.0")
        #expect(image.protectedTLVSize == 12)
        #expect(image.tlvs.map(\.type) == [0x50, 0x10])
        #expect(image.tlvs.first?.protected == true)
        #expect(Self.hex(image.hash) == "2814bcdc1a11f4520fb3e0c6238b93cd8092c4b1e9c698655036316c35e32836")
        #expect(image.hashMatches)
    }

    @Test func aChangedByteIsSeenAndDamageIsRefused() throws {
        var bytes = try Self.fixture("app-1.2.3+4.bin")
        bytes[0x300] ^= 0x01
        #expect(try McuBootImage(bytes).hashMatches == false)
        let whole = try Self.fixture("app-1.2.3+4.bin")
        for (damaged, reason) in [
            (Array(whole.prefix(20)), "shorter than an image header"), ([0] + whole.dropFirst(), "no MCUboot magic"),
            (Array(whole.prefix(0x200 + 100)), "the file has"), (Array(whole.dropLast(8)), "past the end"),
            (Array(whole.prefix(0x200 + 3000)), "no TLV area"),
        ] {
            #expect(throws: McuBootImage.Problem.self, "\(reason)") { try McuBootImage(damaged) }
            #expect { try McuBootImage(damaged) } throws: { "\($0)".contains(reason) }
        }
    }

    @Test func versionsAreParsedAndOrdered() {
        #expect(McuBootImage.Version(parsing: "1.2.3")?.description == "1.2.3")
        #expect(McuBootImage.Version(parsing: "1.2.3.4")?.build == 4)
        for bad in ["1.2", "1.2.3.4.5", "256.0.0", "1.2.65536", "1..3", "+1.2.3", "1.2.3.4294967296", ""] {
            #expect(McuBootImage.Version(parsing: bad) == nil, "\(bad)")
        }
        #expect(McuBootImage.Version(parsing: "1.2.3")! < McuBootImage.Version(parsing: "1.10.0")!)
    }
}
