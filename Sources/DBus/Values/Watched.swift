import Synchronization

/// A value that signal and socket handlers change on the bus thread, and the tasks waiting for it to become
/// something: each change wakes exactly the waiters whose condition now holds, so nothing polls it.
///
/// A wait ends when its condition holds (at once if it holds already), at its deadline, or when its task is
/// cancelled; conditions are evaluated under the value's lock, on the thread that changed it, and must be cheap.
public final class Watched<Value: Sendable>: Sendable {
    private struct Waiter {
        let condition: @Sendable (Value) -> Bool
        var continuation: CheckedContinuation<Value?, Never>?
        /// Ended (deadline or cancellation) before its continuation was stored.
        var ended = false
    }

    private struct State {
        var value: Value
        var waiters: [UInt64: Waiter] = [:]
        var next: UInt64 = 0
    }

    private let state: Mutex<State>

    public init(_ value: Value) { state = Mutex(State(value: value)) }

    /// A copy of the current value.
    public var value: Value { state.withLock { $0.value } }

    /// How many tasks wait now (tests check that none is left behind).
    public var waiting: Int { state.withLock { $0.waiters.count } }

    /// Changes the value and wakes the waiters whose condition holds for the new one.
    public func update<Result: Sendable>(_ body: (inout Value) -> Result) -> Result {
        let (result, woken) = state.withLock { state -> (Result, [(CheckedContinuation<Value?, Never>, Value)]) in
            let result = body(&state.value)
            var woken: [(CheckedContinuation<Value?, Never>, Value)] = []
            for (id, waiter) in state.waiters {
                guard let continuation = waiter.continuation, waiter.condition(state.value) else { continue }
                state.waiters[id] = nil
                woken.append((continuation, state.value))
            }
            return (result, woken)
        }
        for (continuation, value) in woken { continuation.resume(returning: value) }
        return result
    }

    /// Waits until `condition` holds for the value and returns the value then; nil when `deadline` passed or the
    /// task was cancelled first.
    public func wait(until deadline: ContinuousClock.Instant? = nil, for condition: @escaping @Sendable (Value) -> Bool) async -> Value? {
        let start = state.withLock { state -> (id: UInt64, now: Value?) in
            if condition(state.value) { return (0, state.value) }
            defer { state.next += 1 }
            state.waiters[state.next] = Waiter(condition: condition)
            return (state.next, nil)
        }
        if let now = start.now { return now }
        let id = start.id
        let timer = deadline.map { deadline in
            Task { [weak self] in
                try? await Task.sleep(until: deadline, clock: .continuous)
                self?.end(id)
            }
        }
        defer { timer?.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let immediate = state.withLock { state -> Value?? in
                    guard let waiter = state.waiters[id] else { return .some(nil) }
                    if waiter.ended {
                        state.waiters[id] = nil
                        return .some(nil)
                    }
                    if condition(state.value) {
                        state.waiters[id] = nil
                        return .some(state.value)
                    }
                    state.waiters[id]?.continuation = continuation
                    return .none
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            end(id)
        }
    }

    /// Ends the wait `id` without a value: resumes it, or marks it so that it ends as soon as it starts waiting.
    private func end(_ id: UInt64) {
        let continuation = state.withLock { state -> CheckedContinuation<Value?, Never>? in
            guard let waiter = state.waiters[id] else { return nil }
            guard let continuation = waiter.continuation else {
                state.waiters[id]?.ended = true
                return nil
            }
            state.waiters[id] = nil
            return continuation
        }
        continuation?.resume(returning: nil)
    }
}
