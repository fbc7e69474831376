#if canImport(Glibc)
import Glibc
#endif

/// Unbuffered output to a file descriptor, for lines that must appear at once and whole (logs, streamed events).
public enum DescriptorOutput {
    /// Writes all of `bytes` to `descriptor` (retrying short writes and EINTR) and empties it; output that
    /// cannot be written (a closed pipe) is dropped.
    public static func writeAll(_ bytes: inout [UInt8], to descriptor: Int32) {
        guard !bytes.isEmpty else { return }
        bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, base + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    break
                }
            }
        }
        bytes.removeAll(keepingCapacity: true)
    }

    /// Writes `text` to standard error.
    public static func writeError(_ text: String) {
        var bytes = Array(text.utf8)
        writeAll(&bytes, to: STDERR_FILENO)
    }
}
