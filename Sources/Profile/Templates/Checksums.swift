/// The checksums templates offer.
public enum Checksum {
    /// Sum of all bytes modulo 256.
    public static func sum8(_ bytes: [UInt8]) -> UInt8 {
        bytes.reduce(0, &+)
    }

    /// XOR of all bytes.
    public static func xor8(_ bytes: [UInt8]) -> UInt8 {
        bytes.reduce(0, ^)
    }

    /// CRC-16/CCITT-FALSE: polynomial 0x1021, initial value 0xFFFF, no reflection, no final XOR
    /// (check value 0x29B1 for "123456789").
    public static func crc16CCITTFalse(_ bytes: [UInt8]) -> UInt16 {
        crc16CCITTFalse(bytes, continuing: 0xFFFF)
    }

    /// The CRC after `bytes`, starting from `crc` (the CRC of what came before them).
    static func crc16CCITTFalse(_ bytes: [UInt8], continuing crc: UInt16) -> UInt16 {
        var crc = crc
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 {
                crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1
            }
        }
        return crc
    }
}
