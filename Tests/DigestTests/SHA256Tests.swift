import Digest
import Testing

/// SHA-256 against FIPS 180-4's examples, fed whole and in pieces of every size across block boundaries.
@Suite struct SHA256Tests {
    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    @Test func knownAnswers() {
        #expect(Self.hex(SHA256.hash([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Self.hex(SHA256.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            Self.hex(SHA256.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(
            Self.hex(SHA256.hash([UInt8](repeating: 0x61, count: 1_000_000)))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func piecesGiveTheWholeDigest() {
        let message = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let whole = SHA256.hash(message)
        for size in [1, 3, 55, 56, 63, 64, 65, 127, 128, 999] {
            var digest = SHA256()
            for start in stride(from: 0, to: message.count, by: size) { digest.update(message[start..<min(start + size, message.count)]) }
            #expect(digest.finalize() == whole, "pieces of \(size)")
            #expect(digest.finalize() == whole, "finalize leaves the value as it was")
        }
    }
}
