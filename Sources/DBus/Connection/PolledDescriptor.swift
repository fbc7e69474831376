#if canImport(Glibc)
    import Glibc
#endif

/// A socket the loop polls, with the state every such socket needs: whether its owner closed it (nothing more is
/// sent or handed on), the loop's entries that watch it (input, and a sender waiting for room), and whether the
/// descriptor itself is closed yet ("released"). It is released on the loop once no entry watches it, under the lock
/// sends hold: neither a poll nor a send can reach a descriptor number the system has since given to another file.
///
/// `Extra` is the owner's own state, kept under the same lock (a channel's accepted flag, a notification socket's
/// count of drops). Used by the notification sockets (`AcquiredSocket`) and the L2CAP channels (`L2CAPChannelSocket`).
public final class PolledDescriptor<Extra: Sendable>: Sendable {
    public let loop: DBusEventLoop
    private let descriptor: Int32
    private let state: Locked<State>

    private struct State: Sendable {
        var closed = false
        var released = false
        /// The input entry (``poll(_:)``); nil while reading is paused.
        var reader: DBusReader?
        /// The input handler, kept for ``resumeReading()``; dropped on release.
        var handler: (@Sendable (Int32) -> Void)?
        var paused = false
        /// A sender waiting for room (``whenWritable(_:)``): its one-shot entry and what to run.
        var waiter: (reader: DBusReader, then: @Sendable () -> Void)?
        var extra: Extra
    }

    /// Takes ownership of `descriptor`.
    public init(_ descriptor: Int32, loop: DBusEventLoop, extra: Extra) {
        self.descriptor = descriptor
        self.loop = loop
        state = Locked(State(extra: extra))
    }

    /// Dropped without ``close()``: closed the same way (on the loop, once nothing polls it).
    deinit { close() }

    /// Runs `body` under the lock with the descriptor and the owner's state while it is open (neither closed nor
    /// released); nil otherwise. For sends and socket options: the descriptor cannot close under `body`.
    public func whileOpen<Result: Sendable>(_ body: (Int32, inout Extra) -> Result) -> Result? {
        state.withLock { state in
            guard !state.closed, !state.released else { return nil }
            return body(descriptor, &state.extra)
        }
    }

    /// Runs `body` under the lock with the owner's state, open or not.
    public func withExtra<Result: Sendable>(_ body: (inout Extra) -> Result) -> Result {
        state.withLock { body(&$0.extra) }
    }

    /// Closed by its owner, by the far end or under the loop.
    public var isClosed: Bool { state.withLock { $0.closed || $0.released } }

    /// Calls `handler` on the loop thread, with the descriptor, whenever it has input, has hung up or is in error,
    /// until it is released. False when it is closed already. Once per descriptor.
    @discardableResult
    public func poll(_ handler: @escaping @Sendable (Int32) -> Void) -> Bool {
        let descriptor = self.descriptor
        return state.withLock { state in
            guard !state.closed, !state.released, state.reader == nil, state.handler == nil else { return false }
            // Added under the lock: a release asked for after this sees the entry and takes it out (the loop runs
            // both in the order they were asked).
            state.reader = loop.addReader(descriptor, handler: watching(handler))
            state.handler = handler
            return true
        }
    }

    /// Stops watching for input until ``resumeReading()``: its owner reads no more for now, so the socket's buffer
    /// fills and the protocol's flow control holds the far end back (an L2CAP channel's central gets no credits).
    /// A hang-up is not seen meanwhile (the first read after resuming sees it). The handler is not called from the
    /// moment this returns; callable from it.
    public func pauseReading() {
        state.withLock { state in
            guard !state.paused, !state.closed, !state.released, let reader = state.reader else { return }
            state.paused = true
            state.reader = nil
            // Under the lock, as ``poll(_:)`` adds it: a release asked for after this is run after it.
            loop.removeReader(reader) {}
        }
    }

    /// Watches for input again after ``pauseReading()`` (a no-op otherwise, or once closed).
    public func resumeReading() {
        let descriptor = self.descriptor
        state.withLock { state in
            guard state.paused else { return }
            state.paused = false
            guard !state.closed, !state.released, let handler = state.handler else { return }
            state.reader = loop.addReader(descriptor, handler: watching(handler))
        }
    }

    /// The loop's entry for `handler`: not called once reading is paused, though the loop may poll the descriptor
    /// once more before the pause takes it out of its poll set.
    private func watching(_ handler: @escaping @Sendable (Int32) -> Void) -> @Sendable (DBusReader) -> Void {
        let (state, descriptor) = (self.state, self.descriptor)
        return { _ in
            guard !state.withLock({ $0.paused }) else { return }
            handler(descriptor)
        }
    }

    /// Whether reading is paused (``pauseReading()``).
    public var isReadingPaused: Bool { state.withLock { $0.paused } }

    /// Runs `then` once on the loop when the socket can be written to again, has hung up or is in error; at once
    /// (on the caller's thread) when it is closed already or another sender waits. Released before then, it runs
    /// after the descriptor closed (so that its next send learns it).
    public func whenWritable(_ then: @escaping @Sendable () -> Void) {
        let state = self.state
        let waiting = state.withLock { current -> Bool in
            guard !current.closed, !current.released, current.waiter == nil else { return false }
            let reader = loop.whenWritable(descriptor) {
                let waiter = state.withLock { current in
                    defer { current.waiter = nil }
                    return current.waiter
                }
                waiter?.then()
            }
            current.waiter = (reader, then)
            return true
        }
        if !waiting { then() }
    }

    /// Marks it closed; true the first time (the caller then releases it). `descriptorGone`: the loop found the
    /// descriptor closed already (`EBADF`): it is never closed again, its number may be another file's by now.
    public func markClosed(descriptorGone: Bool = false) -> Bool {
        state.withLock { state in
            if descriptorGone { state.released = true }
            defer { state.closed = true }
            return !state.closed
        }
    }

    /// Whether ``markClosed(descriptorGone:)`` ran (a reader checks it between two reads).
    public var isMarkedClosed: Bool { state.withLock { $0.closed } }

    /// Takes the entries watching the descriptor out of the loop's poll set together, then closes it (once), then
    /// runs a waiting sender's `then` and this `then`, on the loop (at once when the loop has stopped).
    public func release(then: @escaping @Sendable () -> Void = {}) {
        let state = self.state
        let descriptor = self.descriptor
        let (readers, waiter) = state.withLock { current in
            defer {
                current.reader = nil
                current.handler = nil
                current.waiter = nil
            }
            return ([current.reader, current.waiter?.reader].compactMap { $0 }, current.waiter?.then)
        }
        loop.removeReaders(readers) {
            state.withLock { current in
                guard !current.released else { return }
                current.released = true
                Glibc.close(descriptor)
            }
            waiter?()
            then()
        }
    }

    /// Marks it closed and releases it; false when it was closed already.
    @discardableResult
    public func close() -> Bool {
        guard markClosed() else { return false }
        release()
        return true
    }
}
