#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The bytes of a capture, read front to back: from a file in chunks (never the whole file at once) or
/// from memory. What ``read(_:)`` returns is a slice of the current chunk; a caller that keeps bytes
/// long should copy them, or it keeps the whole chunk alive.
final class ByteInput {
    /// Bytes read from a file at a time; a longer request gets a chunk of its own size.
    static let chunkSize = 1 << 20

    private var buffer: [UInt8]
    /// Index in `buffer` of the next unread byte, and of the end of the valid bytes.
    private var start: Int
    private var end: Int
    /// File offset of `buffer[start]`.
    private(set) var offset: Int = 0
    private var descriptor: Int32 = -1
    private var reachedEnd: Bool

    init(bytes: [UInt8]) {
        buffer = bytes
        start = 0
        end = bytes.count
        reachedEnd = true
    }

    /// Opens `path` for reading; nil with the system's reason when it cannot be opened.
    init(path: String) throws(CaptureProblem) {
        buffer = []
        start = 0
        end = 0
        reachedEnd = false
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw CaptureProblem(.cannotOpen(path: path, reason: String(cString: strerror(errno))))
        }
        var status = stat()
        if fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFDIR {
            close(fd)
            throw CaptureProblem(.cannotOpen(path: path, reason: "is a directory"))
        }
        descriptor = fd
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Bytes buffered and not yet read.
    var buffered: Int { end - start }

    /// Makes at least `count` bytes available when the input has them; returns how many are (at most
    /// `count`, fewer only at the end of the input).
    @discardableResult
    func fill(_ count: Int) -> Int {
        if end - start >= count || reachedEnd { return min(count, end - start) }
        let capacity = max(Self.chunkSize, count)
        let kept = end - start
        var fresh = [UInt8](repeating: 0, count: capacity)
        var filled = kept
        fresh.withUnsafeMutableBytes { target in
            buffer.withUnsafeBytes { source in
                if kept > 0 { target.baseAddress!.copyMemory(from: source.baseAddress! + start, byteCount: kept) }
            }
            while filled < capacity {
                let got = Glibc_read(descriptor, target.baseAddress! + filled, capacity - filled)
                if got < 0 && errno == EINTR { continue }
                if got <= 0 {
                    reachedEnd = true
                    break
                }
                filled += got
                if filled >= count && filled >= capacity / 2 { break }
            }
        }
        buffer = fresh
        start = 0
        end = filled
        return min(count, end - start)
    }

    /// The next `count` bytes, consumed; nil (nothing consumed) when the input ends first.
    func read(_ count: Int) -> ArraySlice<UInt8>? {
        guard fill(count) == count else { return nil }
        let slice = buffer[start..<(start + count)]
        start += count
        offset += count
        return slice
    }

    /// The next `count` bytes without consuming them; nil when the input ends first.
    func peek(_ count: Int) -> ArraySlice<UInt8>? {
        guard fill(count) == count else { return nil }
        return buffer[start..<(start + count)]
    }

    /// Consumes up to `count` bytes without keeping them; returns how many there were.
    @discardableResult
    func skip(_ count: Int) -> Int {
        var skipped = 0
        while skipped < count {
            let step = fill(min(count - skipped, Self.chunkSize))
            if step == 0 { break }
            start += step
            offset += step
            skipped += step
        }
        return skipped
    }

    /// Whether every byte has been read.
    var atEnd: Bool { fill(1) == 0 }
}

private func Glibc_read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(fd, buffer, count)
}
