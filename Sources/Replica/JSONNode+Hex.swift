import Bluetooth
import JSON

extension JSONNode {
    /// `{"hex": "…"}`: bytes as profiles write them.
    public static func hex(_ bytes: [UInt8]) -> JSONNode {
        .object([("hex", .string(Hex.string(bytes)))])
    }
}
