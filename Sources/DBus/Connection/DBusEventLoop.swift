import CDBus
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A thread that serves libdbus connections and runs Swift jobs, one at a time, in submission order.
///
/// It waits in `poll(2)` on the attached connections' watches, the descriptors of its readers (see
/// ``addReader(_:handler:)``) and an eventfd for submitted jobs; no polling loop, no sleeps. It is also a
/// `SerialExecutor` and a `TaskExecutor`: an actor whose executor is the loop, or a task that prefers it, runs
/// on the thread that reads and writes its D-Bus messages, so answering a method call needs no thread hand-off
/// at all. A loop made by ``DBusConnection/connect(to:on:)`` without
/// one stops with its connection; one made with ``init(name:)`` runs for the life of the process, because
/// an actor using it may be called at any time.
///
/// `@unchecked Sendable`: `watches`, `timeouts`, `connections`, `readers` and `stopped` are touched only on the
/// loop thread (libdbus calls the watch and timeout callbacks from inside calls made on it); `queue` is a mutex.
public final class DBusEventLoop: SerialExecutor, TaskExecutor, @unchecked Sendable {
    typealias Job = @Sendable () -> Void

    private struct Queued {
        let job: Job
        let abandoned: Job?
    }

    /// Jobs not yet run, and whether the loop has stopped taking them.
    private let queue = Mutex<(jobs: [Queued], closed: Bool)>(([], false))
    private let wakeDescriptor: Int32
    private let name: String
    /// The loop thread's `pthread_t` (0 until it is known); read on every wake-up request (each submit, each
    /// message libdbus reads).
    private let thread = Atomic<UInt>(0)
    /// How many times the eventfd was written to wake the loop (tests check that serving does not).
    let wakeUps = Atomic<Int>(0)
    private var watches: [OpaquePointer] = []
    private var timeouts: [OpaquePointer: ContinuousClock.Instant] = [:]
    private var connections: [OpaquePointer] = []
    /// Descriptors polled for input on behalf of their owners, in the order they were added.
    private var readers: [(reader: DBusReader, descriptor: Int32, events: Int16, handler: @Sendable (DBusReader) -> Void)] = []
    private let nextReader = Atomic<UInt64>(1)
    private var stopped = false

    /// Starts a loop thread named `name`.
    public init(name: String) throws(DBusError) {
        let descriptor = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard descriptor >= 0 else { throw .system("eventfd", errno: errno) }
        wakeDescriptor = descriptor
        self.name = name
        let context = Unmanaged.passRetained(self).toOpaque()  // released by the thread when it ends
        var created = pthread_t()
        let result = pthread_create(
            &created, nil,
            { context in
                guard let context else { return nil }
                let loop = Unmanaged<DBusEventLoop>.fromOpaque(context).takeRetainedValue()
                gattemu_name_this_thread(loop.name)  // the kernel keeps 15 bytes
                loop.run()
                return nil
            }, context)
        guard result == 0 else {
            Unmanaged<DBusEventLoop>.fromOpaque(context).release()
            close(descriptor)
            throw .system("pthread_create", errno: result)
        }
        pthread_detach(created)
        thread.store(UInt(created), ordering: .releasing)
    }

    deinit { close(wakeDescriptor) }

    /// Whether the caller runs on the loop thread.
    public var isCurrent: Bool {
        let running = thread.load(ordering: .acquiring)
        return running != 0 && pthread_equal(pthread_self(), pthread_t(running)) != 0
    }

    /// Runs `job` on the loop thread, after the jobs submitted before it; if the loop has stopped (or stops
    /// before reaching it), calls `abandoned` instead, on the caller's or the loop's thread.
    func submit(_ job: @escaping Job, abandoned: Job? = nil) {
        let accepted = queue.withLock { queue in
            if !queue.closed { queue.jobs.append(Queued(job: job, abandoned: abandoned)) }
            return !queue.closed
        }
        guard accepted else {
            abandoned?()
            return
        }
        wake()
    }

    /// Wakes the loop from its wait, unless called on the loop thread: the loop runs its jobs and dispatches
    /// what libdbus has read after every watch it handles, before it waits again, so it needs no wake-up then.
    func wake() {
        guard !isCurrent else { return }
        wakeUps.add(1, ordering: .relaxed)
        var one: UInt64 = 1
        _ = write(wakeDescriptor, &one, 8)
    }

    // MARK: Executor

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let serial = asUnownedSerialExecutor()
        let preferred = asUnownedTaskExecutor()
        // A loop used as an actor's executor is never stopped (see the type's note); a task that only
        // prefers a stopped loop goes on on the global executor.
        submit(
            { job.runSynchronously(isolatedTo: serial, taskExecutor: preferred) },
            abandoned: { job.runSynchronously(on: globalConcurrentExecutor.asUnownedTaskExecutor()) })
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    public func checkIsolated() {
        precondition(isCurrent, "not on the D-Bus loop thread")
    }

    // MARK: Connections

    /// Serves `connection` from now on: installs its watch and timeout callbacks; loop thread only.
    func attach(_ connection: OpaquePointer) {
        connections.append(connection)
        let context = Unmanaged.passUnretained(self).toOpaque()
        dbus_connection_set_watch_functions(
            connection,
            { watch, data in
                guard let watch, let data else { return 0 }
                Unmanaged<DBusEventLoop>.fromOpaque(data).takeUnretainedValue().watches.append(watch)
                return 1
            },
            { watch, data in
                guard let watch, let data else { return }
                Unmanaged<DBusEventLoop>.fromOpaque(data).takeUnretainedValue().watches.removeAll { $0 == watch }
            },
            { _, data in
                // Enabled flags are read on every iteration; nothing to store.
                _ = data
            }, context, nil)
        dbus_connection_set_timeout_functions(
            connection,
            { timeout, data in
                guard let timeout, let data else { return 0 }
                let loop = Unmanaged<DBusEventLoop>.fromOpaque(data).takeUnretainedValue()
                loop.timeouts[timeout] = .now + .milliseconds(Int(dbus_timeout_get_interval(timeout)))
                return 1
            },
            { timeout, data in
                guard let timeout, let data else { return }
                Unmanaged<DBusEventLoop>.fromOpaque(data).takeUnretainedValue().timeouts[timeout] = nil
            },
            { timeout, data in
                guard let timeout, let data else { return }
                let loop = Unmanaged<DBusEventLoop>.fromOpaque(data).takeUnretainedValue()
                loop.timeouts[timeout] = .now + .milliseconds(Int(dbus_timeout_get_interval(timeout)))
            }, context, nil)
        dbus_connection_set_wakeup_main_function(
            connection,
            { data in
                guard let data else { return }
                // libdbus asks for this on every message it reads, mostly on the loop thread itself.
                Unmanaged<DBusEventLoop>.fromOpaque(data).takeUnretainedValue().wake()
            }, context, nil)
    }

    /// Stops serving `connection` (closed and released by the caller just before); loop thread only.
    func detach(_ connection: OpaquePointer) {
        connections.removeAll { $0 == connection }
        if connections.isEmpty {
            watches = []
            timeouts = [:]
        }
    }

    /// Stops the loop after the jobs already submitted; `then` runs last, on the loop thread. Jobs submitted
    /// after this call are abandoned; so is this one (`alreadyStopped` runs instead) if the loop had stopped.
    func stop(then finalJob: @escaping Job, alreadyStopped: Job? = nil) {
        submit(
            { [self] in
                let left = queue.withLock { queue in
                    queue.closed = true
                    defer { queue.jobs = [] }
                    return queue.jobs
                }
                finalJob()
                stopped = true
                readers = []  // polled no more; their handlers (and what they hold) are let go
                for queued in left { queued.abandoned?() }
            }, abandoned: alreadyStopped)
    }

    // MARK: Readers

    /// Calls `handler` (with the reader this returns) on the loop thread whenever `descriptor` has input, has hung
    /// up or is in error (the handler's own read says which), from the next iteration on, until the reader is
    /// removed. The descriptor stays its owner's; close it only in ``removeReader(_:then:)``'s `then`, when the
    /// loop polls it no more. A socket whose packets the loop reads needs no thread of its own, and what the
    /// handler starts on an actor that runs on this loop starts without a wake-up. The handler must not block.
    public func addReader(_ descriptor: Int32, handler: @escaping @Sendable (DBusReader) -> Void) -> DBusReader {
        let id = nextReader.wrappingAdd(1, ordering: .relaxed).oldValue
        let reader = DBusReader(id: id)
        submit { [self] in readers.append((reader, descriptor, Int16(POLLIN), handler)) }
        return reader
    }

    /// Calls `handler` once on the loop thread when `descriptor` can be written to (or has hung up, or is in
    /// error), then polls it for that no more: a sender that found the socket full waits for room without a
    /// thread or a timer. The descriptor must stay open until the handler ran or ``removeReader(_:then:)`` of the
    /// returned reader ran its `then`.
    @discardableResult
    public func whenWritable(_ descriptor: Int32, handler: @escaping @Sendable () -> Void) -> DBusReader {
        let id = nextReader.wrappingAdd(1, ordering: .relaxed).oldValue
        let reader = DBusReader(id: id)
        submit(
            { [self] in
                readers.append(
                    (
                        reader, descriptor, Int16(POLLOUT),
                        { [self] reader in
                            readers.removeAll { $0.reader == reader }
                            handler()
                        }
                    ))
            }, abandoned: handler)
        return reader
    }

    /// Stops polling every one of `gone` in one go (a descriptor's reader and its writability waiter, before the
    /// descriptor is closed); `then` runs once none is in the poll set (at once if the loop has stopped).
    public func removeReaders(_ gone: [DBusReader], then: @escaping @Sendable () -> Void) {
        submit(
            { [self] in
                readers.removeAll { gone.contains($0.reader) }
                then()
            }, abandoned: then)
    }

    /// Stops polling `reader`'s descriptor; `then` runs on the loop thread once it is out of the poll set (or at
    /// once, on the caller's thread, if the loop has stopped).
    public func removeReader(_ reader: DBusReader, then: @escaping @Sendable () -> Void) {
        removeReaders([reader], then: then)
    }

    // MARK: The loop

    private func run() {
        while !stopped {
            runJobs()
            if stopped { break }
            dispatchQueuedMessages()
            if !queue.withLock({ $0.jobs.isEmpty }) { continue }
            waitAndHandle()
            dispatchQueuedMessages()
        }
    }

    private func runJobs() {
        let pending = queue.withLock { queue -> [Queued] in
            let taken = queue.jobs
            queue.jobs.removeAll(keepingCapacity: true)
            return taken
        }
        for (index, queued) in pending.enumerated() {
            queued.job()
            if stopped {
                for later in pending[(index + 1)...] { later.abandoned?() }
                return
            }
        }
    }

    private func dispatchQueuedMessages() {
        for connection in connections {
            while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
        }
    }

    private func waitAndHandle() {
        let active = watches.filter { dbus_watch_get_enabled($0) != 0 }
        var descriptors = [pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)]
        for watch in active {
            let flags = dbus_watch_get_flags(watch)
            var events: Int16 = 0
            if flags & DBUS_WATCH_READABLE.rawValue != 0 { events |= Int16(POLLIN) }
            if flags & DBUS_WATCH_WRITABLE.rawValue != 0 { events |= Int16(POLLOUT) }
            descriptors.append(pollfd(fd: dbus_watch_get_unix_fd(watch), events: events, revents: 0))
        }
        let polledReaders = readers
        for reader in polledReaders {
            descriptors.append(pollfd(fd: reader.descriptor, events: reader.events, revents: 0))
        }
        let result = poll(&descriptors, nfds_t(descriptors.count), pollTimeout())
        if result < 0 { return }  // EINTR: go round again.
        if descriptors[0].revents != 0 {
            var counter: UInt64 = 0
            _ = read(wakeDescriptor, &counter, 8)
        }
        for (index, watch) in active.enumerated() {
            let revents = descriptors[index + 1].revents
            guard revents != 0, watches.contains(watch) else { continue }
            var flags: UInt32 = 0
            if revents & Int16(POLLIN) != 0 { flags |= DBUS_WATCH_READABLE.rawValue }
            if revents & Int16(POLLOUT) != 0 { flags |= DBUS_WATCH_WRITABLE.rawValue }
            if revents & Int16(POLLERR) != 0 { flags |= DBUS_WATCH_ERROR.rawValue }
            if revents & Int16(POLLHUP) != 0 { flags |= DBUS_WATCH_HANGUP.rawValue }
            dbus_watch_handle(watch, flags)
        }
        for (index, reader) in polledReaders.enumerated() {
            let revents = descriptors[1 + active.count + index].revents
            guard revents != 0, readers.contains(where: { $0.reader == reader.reader }) else { continue }
            // A descriptor closed under the loop would be reported again on every iteration: polled no more.
            if revents & Int16(POLLNVAL) != 0 { readers.removeAll { $0.reader == reader.reader } }
            reader.handler(reader.reader)
        }
        let now = ContinuousClock.now
        for (timeout, deadline) in timeouts where deadline <= now {
            guard timeouts[timeout] != nil, dbus_timeout_get_enabled(timeout) != 0 else { continue }
            timeouts[timeout] = now + .milliseconds(Int(dbus_timeout_get_interval(timeout)))
            dbus_timeout_handle(timeout)
        }
    }

    /// Milliseconds until the earliest enabled libdbus timeout, or -1 to wait for I/O only.
    private func pollTimeout() -> Int32 {
        let enabled = timeouts.filter { dbus_timeout_get_enabled($0.key) != 0 }.values
        guard let earliest = enabled.min() else { return -1 }
        let remaining = earliest - .now
        if remaining <= .zero { return 0 }
        let (seconds, attoseconds) = remaining.components
        return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
    }
}

/// A descriptor a ``DBusEventLoop`` polls for its owner (``DBusEventLoop/addReader(_:handler:)``).
public struct DBusReader: Sendable, Hashable {
    let id: UInt64
}
