import TextEscaping

#if canImport(Glibc)
    import Glibc
#endif

/// Unbuffered output to a file descriptor, for lines that must appear at once and whole (logs, streamed events).
public enum DescriptorOutput {
    /// Writes all of `bytes` to `descriptor` (retrying short writes and EINTR) and empties it; output that
    /// cannot be written (a closed pipe) is dropped. Returns how many bytes were not written.
    ///
    /// With `giveUp`, the descriptor (a pipe or terminal that may stop taking output) is written only when
    /// `poll` says it can take more, a pipe-atomic piece at a time, and `giveUp` is asked every 100 ms of
    /// waiting whether to drop the rest; without, writes may block.
    @discardableResult
    public static func writeAll(_ bytes: inout [UInt8], to descriptor: Int32, giveUp: (() -> Bool)? = nil) -> Int {
        guard !bytes.isEmpty else { return 0 }
        let left = bytes.withUnsafeBytes { buffer -> Int in
            guard let base = buffer.baseAddress else { return 0 }
            var offset = 0
            while offset < buffer.count {
                var length = buffer.count - offset
                if let giveUp {
                    var ready = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                    let polled = poll(&ready, 1, 100)
                    if polled == 0 || (polled < 0 && errno == EINTR) {
                        if giveUp() { break }
                        continue
                    }
                    if polled < 0 || ready.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { break }
                    length = min(length, Int(PIPE_BUF))
                }
                let written = write(descriptor, base + offset, length)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            return buffer.count - offset
        }
        bytes.removeAll(keepingCapacity: true)
        return left
    }

    /// Writes `text` to standard error, escaped for a terminal line by line (``TerminalText/escapedLines(_:)``):
    /// error messages quote paths, arguments, profiles, devices and servers, none of which may drive the terminal.
    public static func writeError(_ text: String) {
        var bytes = Array(TerminalText.escapedLines(text).utf8)
        writeAll(&bytes, to: STDERR_FILENO)
    }
}
