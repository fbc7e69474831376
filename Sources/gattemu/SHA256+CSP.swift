import Digest

extension SHA256 {
    /// `sha256-BASE64` as a Content-Security-Policy source.
    static func cspSource(_ text: String) -> String { "'sha256-" + base64(hash(Array(text.utf8))) + "'" }

    static func base64(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var output: [UInt8] = []
        for index in stride(from: 0, to: bytes.count, by: 3) {
            let group =
                (UInt32(bytes[index]) << 16) | (index + 1 < bytes.count ? UInt32(bytes[index + 1]) << 8 : 0)
                | (index + 2 < bytes.count ? UInt32(bytes[index + 2]) : 0)
            output.append(alphabet[Int(group >> 18 & 63)])
            output.append(alphabet[Int(group >> 12 & 63)])
            output.append(index + 1 < bytes.count ? alphabet[Int(group >> 6 & 63)] : UInt8(ascii: "="))
            output.append(index + 2 < bytes.count ? alphabet[Int(group & 63)] : UInt8(ascii: "="))
        }
        return String(decoding: output, as: UTF8.self)
    }
}
