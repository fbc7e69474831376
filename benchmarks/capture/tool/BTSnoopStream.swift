import Capture
import CaptureTestSupport
import Foundation

/// A btsnoop file written as it is generated, a megabyte at a time; each packet 250 µs after the one before.
final class BTSnoopStream {
    let datalink: UInt32
    var time: Int64 = 1_700_000_000_000_000
    private let file: FileHandle
    private var out: [UInt8]
    private var written = 0

    /// Creates `path` (exits 1 when it cannot be written).
    init(path: String, datalink: UInt32) {
        guard FileManager.default.createFile(atPath: path, contents: nil), let file = FileHandle(forWritingAtPath: path) else {
            FileHandle.standardError.write(Data("cannot write \(path)\n".utf8))
            exit(1)
        }
        self.file = file
        self.datalink = datalink
        out =
            Array("btsnoop\0".utf8) + [0, 0, 0, 1] + [
                UInt8(datalink >> 24), UInt8(datalink >> 16 & 0xFF), UInt8(datalink >> 8 & 0xFF), UInt8(datalink & 0xFF),
            ]
    }

    /// Bytes of the file so far.
    var size: Int { written + out.count }

    func emit(_ kind: CapturePacket.Kind, _ bytes: [UInt8], _ direction: HCIDirection = .unknown, controller: UInt16 = 0) {
        CaptureWriter.appendBTSnoopRecord(
            CapturePacket(kind: kind, direction: direction, controller: controller, timestamp: time, bytes: bytes),
            datalink: datalink, to: &out)
        time += 250
        if out.count >= 1 << 20 { flush() }
    }

    func close() {
        flush()
        try? file.close()
    }

    private func flush() {
        file.write(Data(out))
        written += out.count
        out.removeAll(keepingCapacity: true)
    }
}
