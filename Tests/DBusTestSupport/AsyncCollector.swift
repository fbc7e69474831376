import Synchronization

/// Collects values delivered by callbacks and lets a test await them, with a deadline.
public final class AsyncCollector<Value: Sendable>: Sendable {
    private let state = Mutex<(values: [Value], waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)])>(([], []))

    public init() {}

    public func append(_ value: Value) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.values.append(value)
            let count = state.values.count
            let ready = state.waiters.filter { $0.count <= count }.map(\.continuation)
            state.waiters.removeAll { $0.count <= count }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    public var values: [Value] { state.withLock { $0.values } }

    /// Waits until at least `count` values arrived or `timeout` passed (a minute: a loaded machine), and returns what
    /// arrived.
    public func wait(for count: Int, timeout: Duration = .seconds(60)) async -> [Value] {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let done = self.state.withLock { state -> Bool in
                        if state.values.count >= count { return true }
                        state.waiters.append((count, continuation))
                        return false
                    }
                    if done { continuation.resume() }
                }
            }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
            // Release a waiter left behind by the timeout.
            let leftovers = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                defer { state.waiters.removeAll() }
                return state.waiters.map(\.continuation)
            }
            for continuation in leftovers { continuation.resume() }
        }
        return values
    }
}
